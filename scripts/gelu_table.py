#!/usr/bin/env python3
"""Prints the coefficient tables of the AVX-512 GELUs (src/cpu/kernels/gelu_simd.hpp).

Both GELUs are v / 2 + |v| q(|v|): GELU erf with q(a) = erf(a / sqrt(2)) / 2,
GELU tanh with q(a) = tanh(sqrt(2 / pi) (a + 0.044715 a^3)) / 2. q on a in
[0, 6.2) is cut into 31 intervals of width 0.2; on interval i it is a degree-4
polynomial in r = a / 0.2 - i in [0, 1), fitted by least squares on 200
Chebyshev nodes (close to minimax) in float64 and rounded to float32. Interval
31 (a >= 6.2, where 1/2 - q(a) < 1e-9 for both) is the constant 1/2. Then it
checks each GELU built from its rounded table, evaluated as the kernel does
(float32, one rounding per fma), against the exact one in float64: max |error|
/ max(1, |x|) over [-12, 12].

    python3 scripts/gelu_table.py
"""
import math

import numpy as np

WIDTH = 0.2
INTERVALS = 31  # with a polynomial; the 32nd lane is the constant 1/2
LANES = INTERVALS + 1
DEGREE = 4
NODES = 200


def half_erf(a):
    return 0.5 * math.erf(a / math.sqrt(2.0))


def half_tanh(a):
    return 0.5 * math.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a * a * a))


FORMS = [("kGeluHalfErf", half_erf), ("kGeluHalfTanh", half_tanh)]


def fit(q):
    table = np.zeros((DEGREE + 1, LANES), dtype=np.float32)
    r = 0.5 - 0.5 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
    basis = np.vander(r, DEGREE + 1, increasing=True)
    for i in range(INTERVALS):
        values = np.array([q((i + x) * WIDTH) for x in r])
        coef, *_ = np.linalg.lstsq(basis, values, rcond=None)
        table[:, i] = coef.astype(np.float32)
    table[0, INTERVALS] = 0.5
    return table


def fma32(a, b, c):
    return np.float32(float(a) * float(b) + float(c))


def gelu(table, v):
    v = np.float32(v)
    a = min(abs(v), np.float32(INTERVALS * WIDTH))
    t = np.float32(a * np.float32(1.0 / WIDTH))
    whole = np.float32(math.floor(t))
    r = np.float32(t - whole)
    i = int(whole)
    p = table[DEGREE][i]
    for k in range(DEGREE - 1, -1, -1):
        p = fma32(p, r, table[k][i])
    return fma32(abs(v), p, np.float32(0.5) * v)


def literal(c):
    text = f"{float(c):.9g}"
    return text + ("f" if any(ch in text for ch in ".e") else ".0f")


def main():
    for name, q in FORMS:
        table = fit(q)
        worst = 0.0
        for x in np.linspace(-12.0, 12.0, 240001, dtype=np.float32):
            exact = float(x) * (0.5 + math.copysign(q(abs(float(x))), float(x)))
            worst = max(worst, abs(float(gelu(table, x)) - exact) / max(1.0, abs(float(x))))
        print(f"// max |error| / max(1, |x|) over [-12, 12]: {worst:.3g}")
        print(f"alignas(64) constexpr float {name}[{DEGREE + 1}][{LANES}] = {{  // [coefficient of r^k][interval]")
        for k in range(DEGREE + 1):
            literals = [literal(c) for c in table[k]]
            lines = [", ".join(literals[j:j + 4]) for j in range(0, LANES, 4)]
            print("    {" + ",\n     ".join(lines) + "},")
        print("};")


if __name__ == "__main__":
    main()
