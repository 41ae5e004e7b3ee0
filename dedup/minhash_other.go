//go:build !amd64 || purego

package dedup

type mhState struct{}

func (sg *signer) mhTemplate() *mhState { return nil }
