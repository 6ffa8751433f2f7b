//! Every op on the CPU backend against naive f64 references, and bad input.
use tops::*;

fn desc(dims: &[i64]) -> TensorDesc {
    TensorDesc::new(DType::F32, dims).unwrap()
}

/// Deterministic pseudo-normal values (xorshift + Box-Muller-free sum of uniforms).
fn randn(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            let mut acc = 0.0;
            for _ in 0..4 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                acc += (s >> 11) as f64 / (1u64 << 53) as f64;
            }
            ((acc - 2.0) * 1.7) as f32
        })
        .collect()
}

fn assert_close(out: &[f32], reference: &[f64], tol: f64) {
    assert_eq!(out.len(), reference.len());
    let (mut num, mut den) = (0.0, 0.0);
    for (o, r) in out.iter().zip(reference) {
        assert!(!o.is_nan(), "NaN in output");
        num += (*o as f64 - r).powi(2);
        den += r * r;
    }
    let err = (num / if den == 0.0 { 1.0 } else { den }).sqrt();
    assert!(err < tol, "relative error {err} >= {tol}");
}

const TOL: f64 = 1e-5;

fn ctx() -> Context {
    Context::cpu().unwrap()
}

#[test]
fn version_and_backend() {
    assert!(version().starts_with("tops "));
    assert!(backend_available(Backend::Cpu).0);
    assert!(["sse4", "avx2", "avx512"].contains(&cpu_isa().as_str()));
}

#[test]
fn softmax_log_with_lengths() {
    let mut c = ctx();
    let (rows, n) = (4usize, 19usize);
    let x = randn(rows * n, 1);
    let lengths = [19i32, 5, 1, 0];
    let mut y = vec![f32::NAN; rows * n];
    let op = Softmax::new(desc(&[4, 19]), desc(&[4, 19]))
        .lengths(TensorDesc::new(DType::I32, &[4, 1]).unwrap())
        .scale(0.7)
        .create(&c)
        .unwrap();
    op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y),
                             Arg::input(ArgKind::LENGTHS, &lengths)]).unwrap();
    let mut reference = vec![0.0f64; rows * n];
    for r in 0..rows {
        let len = lengths[r] as usize;
        let row: Vec<f64> = (0..len).map(|j| 0.7 * x[r * n + j] as f64).collect();
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for j in 0..n {
            reference[r * n + j] = if j < len { row[j] - m - s.ln() } else { f64::NEG_INFINITY };
        }
    }
    // log-softmax: masked entries are -inf; compare the finite ones and check the rest exactly
    let op_log = Softmax::new(desc(&[4, 19]), desc(&[4, 19]))
        .lengths(TensorDesc::new(DType::I32, &[4, 1]).unwrap())
        .scale(0.7)
        .log(true)
        .create(&c)
        .unwrap();
    let mut ly = vec![f32::NAN; rows * n];
    op_log.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut ly),
                                 Arg::input(ArgKind::LENGTHS, &lengths)]).unwrap();
    let (fin_out, fin_ref): (Vec<f32>, Vec<f64>) =
        ly.iter().zip(&reference).filter(|(_, r)| r.is_finite()).map(|(o, r)| (*o, *r)).unzip();
    assert_close(&fin_out, &fin_ref, TOL);
    assert!(ly.iter().zip(&reference).all(|(o, r)| r.is_finite() || *o == f32::NEG_INFINITY));
    let probs: Vec<f64> = reference.iter().map(|r| r.exp()).collect();
    assert_close(&y, &probs, TOL);
}

#[test]
fn transpose_strided_output() {
    let mut c = ctx();
    let x = randn(3 * 5, 2);
    let mut y = vec![-1.0f32; 5 * 4];
    let out = TensorDesc::builder(DType::F32).dims(&[5, 3]).strides(&[4, 1]).build().unwrap();
    let op = Transpose::new(desc(&[3, 5]), out, &[1, 0]).create(&c).unwrap();
    op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y)]).unwrap();
    for i in 0..5 {
        for j in 0..3 {
            assert_eq!(y[i * 4 + j], x[j * 5 + i]);
        }
        assert_eq!(y[i * 4 + 3], -1.0);
    }
}

fn norm_ref(s: &[f64], g: &[f32], b: Option<&[f32]>, n: usize, rms: bool, eps: f64) -> Vec<f64> {
    s.chunks(n)
        .flat_map(|row| {
            let mu = if rms { 0.0 } else { row.iter().sum::<f64>() / n as f64 };
            let var = row.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / n as f64;
            let rstd = 1.0 / (var + eps).sqrt();
            row.iter()
                .enumerate()
                .map(|(j, v)| (v - mu) * rstd * g[j] as f64 + b.map_or(0.0, |b| b[j] as f64))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn layer_norm_with_bias_residual_prenorm() {
    let mut c = ctx();
    let (rows, n) = (5usize, 48usize);
    let (x, r, bias, g, b) = (randn(rows * n, 3), randn(rows * n, 4), randn(n, 5), randn(n, 6), randn(n, 7));
    let (mut y, mut pre, mut rstd) = (vec![f32::NAN; rows * n], vec![f32::NAN; rows * n], vec![f32::NAN; rows]);
    let vec_n = desc(&[48]);
    let op = Norm::layer(desc(&[5, 48]), desc(&[5, 48]))
        .gamma(vec_n).beta(vec_n).bias(vec_n).residual(desc(&[5, 48])).prenorm(desc(&[5, 48])).rstd(desc(&[5]))
        .eps(1e-4)
        .create(&c)
        .unwrap();
    op.execute(&mut c, &mut [
        Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y), Arg::input(ArgKind::GAMMA, &g),
        Arg::input(ArgKind::BETA, &b), Arg::input(ArgKind::BIAS, &bias), Arg::input(ArgKind::RESIDUAL, &r),
        Arg::output(ArgKind::PRENORM, &mut pre), Arg::output(ArgKind::RSTD, &mut rstd),
    ]).unwrap();
    let s: Vec<f64> = (0..rows * n).map(|i| x[i] as f64 + bias[i % n] as f64 + r[i] as f64).collect();
    assert_close(&y, &norm_ref(&s, &g, Some(&b), n, false, 1e-4), TOL);
    assert_close(&pre, &s, TOL);
    let rs: Vec<f64> = s.chunks(n).map(|row| {
        let mu = row.iter().sum::<f64>() / n as f64;
        1.0 / (row.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / n as f64 + 1e-4).sqrt()
    }).collect();
    assert_close(&rstd, &rs, TOL);
}

#[test]
fn rms_norm() {
    let mut c = ctx();
    let (x, g) = (randn(3 * 40, 8), randn(40, 9));
    let mut y = vec![f32::NAN; 3 * 40];
    let op = Norm::rms(desc(&[3, 40]), desc(&[3, 40])).gamma(desc(&[40])).eps(1e-6).create(&c).unwrap();
    op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y),
                             Arg::input(ArgKind::GAMMA, &g)]).unwrap();
    let s: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    assert_close(&y, &norm_ref(&s, &g, None, 40, true, 1e-6), TOL);
}

#[test]
fn reduce_every_op_over_rows() {
    let mut c = ctx();
    let x: Vec<f32> = randn(6 * 7, 10).iter().map(|v| 1.0 + 0.3 * v).collect();
    let cases: [(ReduceOp, fn(&[f64]) -> f64); 7] = [
        (ReduceOp::Sum, |s| s.iter().sum()),
        (ReduceOp::Mean, |s| s.iter().sum::<f64>() / s.len() as f64),
        (ReduceOp::Max, |s| s.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        (ReduceOp::Min, |s| s.iter().cloned().fold(f64::INFINITY, f64::min)),
        (ReduceOp::Prod, |s| s.iter().product()),
        (ReduceOp::SumSq, |s| s.iter().map(|v| v * v).sum()),
        (ReduceOp::Norm2, |s| s.iter().map(|v| v * v).sum::<f64>().sqrt()),
    ];
    for (op_kind, f) in cases {
        let mut y = vec![f32::NAN; 6];
        let op = Reduce::new(op_kind, desc(&[6, 7]), desc(&[6, 1])).axes(&[1]).keepdims(true).create(&c).unwrap();
        op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y)]).unwrap();
        let reference: Vec<f64> = x.chunks(7).map(|r| f(&r.iter().map(|v| *v as f64).collect::<Vec<_>>())).collect();
        assert_close(&y, &reference, TOL);
    }
}

fn erf(x: f64) -> f64 {
    // series for |x| < 3, asymptotic 1 beyond: accurate to ~1e-12 where used
    if x.abs() > 5.0 {
        return x.signum();
    }
    let (mut term, mut sum, mut k) = (x, x, 0.0);
    while term.abs() > 1e-17 {
        k += 1.0;
        term *= -x * x / k;
        sum += term / (2.0 * k + 1.0);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn bias_act_every_activation() {
    let mut c = ctx();
    let (x, bias) = (randn(4 * 9, 11), randn(9, 12));
    let acts: [(Activation, fn(f64) -> f64); 5] = [
        (Activation::None, |v| v),
        (Activation::Relu, |v| v.max(0.0)),
        (Activation::GeluErf, |v| v * 0.5 * (1.0 + erf(v / 2f64.sqrt()))),
        (Activation::GeluTanh, |v| {
            v * 0.5 * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
        }),
        (Activation::Silu, |v| v / (1.0 + (-v).exp())),
    ];
    for (act, f) in acts {
        let mut y = vec![f32::NAN; 36];
        let op = BiasAct::new(desc(&[4, 9]), desc(&[4, 9]), act).bias(desc(&[1, 9])).create(&c).unwrap();
        op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y),
                                 Arg::input(ArgKind::BIAS, &bias)]).unwrap();
        let reference: Vec<f64> = (0..36).map(|i| f(x[i] as f64 + bias[i % 9] as f64)).collect();
        assert_close(&y, &reference, TOL);
    }
}

#[test]
fn prelu_per_channel() {
    let mut c = ctx();
    let (x, slope) = (randn(2 * 3 * 5, 13), randn(3, 14));
    let mut y = vec![f32::NAN; 30];
    let op = Prelu::new(desc(&[2, 3, 5]), desc(&[1, 3, 1]), desc(&[2, 3, 5])).create(&c).unwrap();
    op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::input(ArgKind::SLOPE, &slope),
                             Arg::output(ArgKind::Y, &mut y)]).unwrap();
    let reference: Vec<f64> = (0..30)
        .map(|i| if x[i] > 0.0 { x[i] as f64 } else { x[i] as f64 * slope[(i / 5) % 3] as f64 })
        .collect();
    assert_close(&y, &reference, TOL);
}

#[test]
fn weighted_sum_broadcast() {
    let mut c = ctx();
    let (a, b) = (randn(12, 15), randn(4, 16));
    let mut y = vec![f32::NAN; 12];
    let op = WeightedSum::new(desc(&[3, 4])).input(desc(&[3, 4]), 1.5).input(desc(&[1, 4]), -2.0).create(&c).unwrap();
    op.execute(&mut c, &mut [Arg::output(ArgKind::Y, &mut y), Arg::input(ArgKind::input(0), &a),
                             Arg::input(ArgKind::input(1), &b)]).unwrap();
    let reference: Vec<f64> = (0..12).map(|i| 1.5 * a[i] as f64 - 2.0 * b[i % 4] as f64).collect();
    assert_close(&y, &reference, TOL);
}

#[test]
fn gemm_transposed_a_with_c_and_bias() {
    let mut c = ctx();
    let (m, n, k) = (6usize, 10usize, 17usize);
    let (a, b, cc, bias) = (randn(k * m, 17), randn(k * n, 18), randn(m * n, 19), randn(n, 20));
    let mut d = vec![f32::NAN; m * n];
    let op = Gemm::new(desc(&[17, 6]), desc(&[17, 10]), desc(&[6, 10]))
        .trans_a(true).c(desc(&[6, 10])).bias(desc(&[10])).alpha(0.5).beta(-1.0).act(Activation::Relu)
        .create(&c)
        .unwrap();
    op.execute(&mut c, &mut [Arg::input(ArgKind::A, &a), Arg::input(ArgKind::B, &b), Arg::output(ArgKind::D, &mut d),
                             Arg::input(ArgKind::C, &cc), Arg::input(ArgKind::BIAS, &bias)]).unwrap();
    let mut reference = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k).map(|p| a[p * m + i] as f64 * b[p * n + j] as f64).sum();
            reference[i * n + j] = (0.5 * dot - cc[i * n + j] as f64 + bias[j] as f64).max(0.0);
        }
    }
    assert_close(&d, &reference, TOL);
}

#[test]
fn attention_gqa_causal_with_lse() {
    let mut c = ctx();
    let (bsz, sq, sk, h, hk, dim) = (2usize, 7usize, 9usize, 4usize, 2usize, 16usize);
    let (q, k, v) = (randn(bsz * sq * h * dim, 21), randn(bsz * sk * hk * dim, 22), randn(bsz * sk * hk * dim, 23));
    let (mut o, mut lse) = (vec![f32::NAN; q.len()], vec![f32::NAN; bsz * h * sq]);
    let qd = desc(&[2, 7, 4, 16]);
    let kd = desc(&[2, 9, 2, 16]);
    let op = match Attention::new(qd, kd, kd, qd).causal(true).lse(desc(&[2, 4, 7])).create(&c) {
        Err(e) if e.status == sys::TOPS_ERROR_NOT_SUPPORTED => {
            eprintln!("skipped: CPU attention not supported in this build: {e}");
            return;
        }
        r => r.unwrap(),
    };
    op.execute(&mut c, &mut [Arg::input(ArgKind::Q, &q), Arg::input(ArgKind::K, &k), Arg::input(ArgKind::V, &v),
                             Arg::output(ArgKind::O, &mut o), Arg::output(ArgKind::LSE, &mut lse)]).unwrap();
    let (mut ro, mut rl) = (vec![0.0; o.len()], vec![0.0; lse.len()]);
    for b in 0..bsz {
        for hh in 0..h {
            let kh = hh / (h / hk);
            for i in 0..sq {
                let qi = |e: usize| q[((b * sq + i) * h + hh) * dim + e] as f64;
                let keys = 0..=(i + sk - sq);
                let s: Vec<f64> = keys.clone()
                    .map(|j| (0..dim).map(|e| qi(e) * k[((b * sk + j) * hk + kh) * dim + e] as f64).sum::<f64>()
                        / (dim as f64).sqrt())
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = s.iter().map(|x| (x - m).exp()).sum();
                rl[(b * h + hh) * sq + i] = m + z.ln();
                for e in 0..dim {
                    ro[((b * sq + i) * h + hh) * dim + e] = keys.clone()
                        .map(|j| (s[j] - m).exp() / z * v[((b * sk + j) * hk + kh) * dim + e] as f64)
                        .sum();
                }
            }
        }
    }
    assert_close(&o, &ro, TOL);
    assert_close(&lse, &rl, TOL);
}

#[test]
fn op_is_shared_across_threads() {
    let op = Softmax::new(desc(&[2, 3]), desc(&[2, 3])).create(&ctx()).unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let op = &op;
            s.spawn(move || {
                let mut c = ctx();
                let x = [t as f32; 6];
                let mut y = [0.0f32; 6];
                op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y)]).unwrap();
                assert_close(&y, &[1.0 / 3.0; 6], TOL);
            });
        }
    });
}

#[test]
fn bad_input_is_an_error() {
    let mut c = ctx();
    let e = Softmax::new(desc(&[3, 4]), desc(&[3, 5])).create(&c).unwrap_err();
    assert_eq!(e.status, sys::TOPS_ERROR_BAD_SHAPE);
    assert!(e.message.contains("softmax"), "{e}");
    let e = Gemm::new(desc(&[3, 4]), desc(&[5, 6]), desc(&[3, 6])).create(&c).unwrap_err();
    assert_eq!(e.status, sys::TOPS_ERROR_BAD_SHAPE);
    assert!(!e.message.is_empty());
    let e = Softmax::new(desc(&[3, 4]), desc(&[3, 4])).axis(7).create(&c).unwrap_err();
    assert_eq!(e.status_name(), "TOPS_ERROR_BAD_AXIS");
    assert_eq!(TensorDesc::new(DType::F32, &[1; 9]).unwrap_err().status, sys::TOPS_ERROR_BAD_RANK);
    assert_eq!(TensorDesc::new(DType::F32, &[-1]).unwrap_err().status, sys::TOPS_ERROR_BAD_SHAPE);
    assert!(TensorDesc::builder(DType::F32).dims(&[2, 2]).strides(&[1]).build().is_err());
    assert!(WeightedSum::new(desc(&[2])).create(&c).is_err());

    let op = Softmax::new(desc(&[3, 4]), desc(&[3, 4])).create(&c).unwrap();
    let x = randn(12, 1);
    let mut y = vec![0.0f32; 12];
    let short = op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x[..11]), Arg::output(ArgKind::Y, &mut y)]);
    assert_eq!(short.unwrap_err().status, sys::TOPS_ERROR_BAD_SHAPE);
    let halves = [0u16; 12];
    let wrong_type = op.execute(&mut c, &mut [Arg::input(ArgKind::X, &halves), Arg::output(ArgKind::Y, &mut y)]);
    assert_eq!(wrong_type.unwrap_err().status, sys::TOPS_ERROR_BAD_DTYPE);
    let y2 = vec![0.0f32; 12];
    let not_output = op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::input(ArgKind::Y, &y2)]);
    assert_eq!(not_output.unwrap_err().status, sys::TOPS_ERROR_INVALID_ARGUMENT);
    let unknown = op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x), Arg::output(ArgKind::Y, &mut y),
                                           Arg::input(ArgKind::A, &x)]);
    assert_eq!(unknown.unwrap_err().status, sys::TOPS_ERROR_UNKNOWN_ARGUMENT);
    let missing = op.execute(&mut c, &mut [Arg::input(ArgKind::X, &x)]);
    let missing = missing.unwrap_err();
    assert_eq!(missing.status, sys::TOPS_ERROR_MISSING_ARGUMENT);
    assert!(missing.to_string().starts_with("TOPS_ERROR_MISSING_ARGUMENT: "));
    // null handles reach the C API only through sys; it reports them as errors
    let status = unsafe { sys::tops_op_execute(c.as_raw(), std::ptr::null_mut(), std::ptr::null(), 0,
                                               std::ptr::null_mut(), 0) };
    assert_eq!(status, sys::TOPS_ERROR_NULL_POINTER);
}

#[test]
fn execute_device_path_on_cpu_pointers() {
    // the CPU backend takes host pointers through the same raw path CUDA callers use
    let mut c = ctx();
    let op = BiasAct::new(desc(&[2, 2]), desc(&[2, 2]), Activation::Relu).create(&c).unwrap();
    let x = [-1.0f32, 2.0, -3.0, 4.0];
    let mut y = [f32::NAN; 4];
    let args = [DeviceArg { kind: ArgKind::X, ptr: x.as_ptr().cast() },
                DeviceArg { kind: ArgKind::Y, ptr: y.as_mut_ptr().cast() }];
    assert_eq!(op.workspace_size().unwrap(), 0);
    unsafe { op.execute_device(&mut c, &args, std::ptr::null_mut(), 0) }.unwrap();
    assert_eq!(y, [0.0, 2.0, 0.0, 4.0]);
    assert!(!op.kernel_name().is_empty());
}
