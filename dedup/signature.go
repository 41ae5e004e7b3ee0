package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// signatureVersion is the first byte of a marshaled Signature.
const signatureVersion = 1

const flagSuper16 = 1 // supershingles stored in 2 bytes each

// ErrSignatureFormat is returned (wrapped) by UnmarshalBinary for bad input.
var ErrSignatureFormat = errors.New("dedup: bad signature encoding")

// MarshalBinary encodes s compactly: version, flags, uvarint Words, Exact,
// Simhash, uvarint len(Sketch) and the samples, uvarint len(Super) and the
// supershingles (2 bytes each when all fit in 16 bits), then the 64 margins.
func (s *Signature) MarshalBinary() ([]byte, error) {
	flags := byte(flagSuper16)
	for _, v := range s.Super {
		if v > 0xffff {
			flags = 0
			break
		}
	}
	superW := 8
	if flags&flagSuper16 != 0 {
		superW = 2
	}
	b := make([]byte, 0, 2+binary.MaxVarintLen64*3+16+8*len(s.Sketch)+superW*len(s.Super)+64)
	b = append(b, signatureVersion, flags)
	b = binary.AppendUvarint(b, uint64(s.Words))
	b = binary.LittleEndian.AppendUint64(b, s.Exact)
	b = binary.LittleEndian.AppendUint64(b, s.Simhash)
	b = binary.AppendUvarint(b, uint64(len(s.Sketch)))
	for _, v := range s.Sketch {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(s.Super)))
	for _, v := range s.Super {
		if superW == 2 {
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		} else {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return append(b, s.Margins[:]...), nil
}

// UnmarshalBinary decodes what MarshalBinary produced.
func (s *Signature) UnmarshalBinary(data []byte) error {
	if len(data) < 2 {
		return fmt.Errorf("%w: %d bytes", ErrSignatureFormat, len(data))
	}
	if data[0] != signatureVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrSignatureFormat, data[0], signatureVersion)
	}
	flags := data[1]
	p := data[2:]
	uvarint := func(what string, limit uint64) (uint64, error) {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > limit {
			return 0, fmt.Errorf("%w: %s", ErrSignatureFormat, what)
		}
		p = p[n:]
		return v, nil
	}
	words, err := uvarint("words", 1<<40)
	if err != nil {
		return err
	}
	if len(p) < 16 {
		return fmt.Errorf("%w: truncated header", ErrSignatureFormat)
	}
	exact, simh := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
	p = p[16:]
	ns, err := uvarint("sketch length", 1<<16)
	if err != nil {
		return err
	}
	if uint64(len(p)) < 8*ns {
		return fmt.Errorf("%w: truncated sketch", ErrSignatureFormat)
	}
	sketch := make([]uint64, ns)
	for i := range sketch {
		sketch[i] = binary.LittleEndian.Uint64(p[8*i:])
	}
	p = p[8*ns:]
	nk, err := uvarint("supershingle count", 1<<16)
	if err != nil {
		return err
	}
	w := uint64(8)
	if flags&flagSuper16 != 0 {
		w = 2
	}
	if uint64(len(p)) != w*nk+64 {
		return fmt.Errorf("%w: %d trailing bytes, want %d", ErrSignatureFormat, len(p), w*nk+64)
	}
	super := make([]uint64, nk)
	for i := range super {
		if w == 2 {
			super[i] = uint64(binary.LittleEndian.Uint16(p[2*i:]))
		} else {
			super[i] = binary.LittleEndian.Uint64(p[8*i:])
		}
	}
	p = p[w*nk:]
	*s = Signature{Exact: exact, Words: int(words), Sketch: sketch, Super: super, Simhash: simh}
	copy(s.Margins[:], p)
	return nil
}
