//go:build amd64 && !purego

package dedup

//go:generate go run ./internal/asmgen

// mhState is the min-hash state the kernel works on: up to 128 samples, in
// 16 groups of 8 byte lanes (one 64-bit prefix word per group). Its layout is
// fixed by the offsets in minhash_amd64.s (checked by TestMinhashStateLayout).
type mhState struct {
	seed  [16]uint64  // prefix seed per group (prefSeed)
	mul   [16]uint64  // prefix multiplier per group (prefMul)
	valid [2]uint64   // byte lanes in use, for each 8-group half
	ts    [128]uint64 // tail seed per sample
	mins  [16]uint64  // smallest prefix byte per lane so far (0xff at start)
	cand  [128]uint64 // the feature holding it
	tail  [128]uint64 // mix64(cand ^ ts) (all ones at start)
}

//go:noescape
func minhashAVX512(xs []uint64, st *mhState)

// mhTemplate returns the kernel's starting state for sg, or nil if sg has
// more samples than the kernel holds.
func (sg *signer) mhTemplate() *mhState {
	ns := sg.samples
	if ns > 128 || ns <= 0 {
		return nil
	}
	st := new(mhState)
	copy(st.seed[:], sg.prefSeed)
	copy(st.mul[:], sg.prefMul)
	for i := 0; i < ns; i++ {
		st.valid[i/64] |= 1 << (i % 64)
	}
	copy(st.ts[:], sg.tailSeed)
	for i := range st.mins {
		st.mins[i] = ^uint64(0)
	}
	for i := range st.tail {
		st.tail[i] = ^uint64(0)
	}
	return st
}

// minhashFast runs the AVX-512 kernel (kernels.minhash); it reports false
// (and does nothing) when sg has more samples than the kernel holds.
func (sg *signer) minhashFast(xs []uint64, out []uint64) bool {
	if sg.mh == nil || len(out) != sg.samples {
		return false
	}
	st := sg.mhPool.Get().(*mhState)
	*st = *sg.mh
	minhashAVX512(xs, st)
	copy(out, st.cand[:len(out)])
	sg.mhPool.Put(st)
	return true
}
