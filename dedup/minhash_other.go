//go:build !amd64 || purego

package dedup

const hasAVX512 = false

type mhState struct{}

func (sg *signer) mhTemplate() *mhState { return nil }

func (sg *signer) minhashFast(xs []uint64, out []uint64) bool { return false }

func tagScan(tags []uint16, lo, hi []uint32, q []uint16, out []uint32) bool { return false }
