package tops

import "math"

// BF16FromFloat32 rounds f to bfloat16 bits (round to nearest even; NaN stays NaN).
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BF16ToFloat32 widens bfloat16 bits to float32.
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }
