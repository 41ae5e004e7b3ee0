package storage

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A page's raw request ('w/'), raw response ('r/') and visible text ('t/')
// are stored compressed (issue 30): the marker byte 0xFF, then one zstd
// frame (which begins with the zstd magic 28 B5 2F FD). Stores written before
// hold these values as they are: an HTTP request begins with its method, a
// response with "HTTP/", a text with UTF-8 text; none begins with 0xFF, which
// UTF-8 never uses, followed by the zstd magic. A value that does not begin
// with the five bytes is read as it is, so old stores read as before; a value
// that compresses to no less than itself is stored as it is, unless it would
// then be taken for a compressed one. Every read of these values goes through
// decodeValue.
var compressedPrefix = []byte{0xFF, 0x28, 0xB5, 0x2F, 0xFD}

// compressLevel: zstd's fastest level. On the corpus's responses and texts
// it keeps 31.6% of the bytes; the default level keeps 30.0% for 3-4 times
// the CPU, the better level 29.1% for 8 times (BenchmarkCompressLevel,
// BENCHMARKS.md "Issue 30: the store per page"). The values are compressed in
// the crawl's one committer, which every page waits on.
const compressLevel = zstd.SpeedFastest

// maxDecoded bounds what one value may decode to (a damaged frame header
// cannot make the reader allocate more): the largest value the store holds.
const maxDecoded = MaxValueLogFileSize

var (
	codecOnce sync.Once
	encoder   *zstd.Encoder // EncodeAll and DecodeAll are safe for concurrent use
	decoder   *zstd.Decoder
	codecErr  error
)

func codec() (*zstd.Encoder, *zstd.Decoder, error) {
	codecOnce.Do(func() {
		encoder, codecErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(compressLevel),
			zstd.WithEncoderConcurrency(2),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false)) // Badger checksums every value it reads
		if codecErr != nil {
			return
		}
		decoder, codecErr = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(2),
			zstd.WithDecoderMaxMemory(maxDecoded))
	})
	return encoder, decoder, codecErr
}

// encodeValue returns v as stored: compressed, or as it is when that is no
// larger and cannot be mistaken for a compressed value.
func encodeValue(v []byte) ([]byte, error) {
	if len(v) == 0 {
		return v, nil
	}
	enc, _, err := codec()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 1, 1+len(v)/2)
	out[0] = compressedPrefix[0]
	out = enc.EncodeAll(v, out)
	if len(out) >= len(v) && !bytes.HasPrefix(v, compressedPrefix) {
		return v, nil
	}
	return out, nil
}

// decodeValue returns the value a stored one holds (see encodeValue). An
// error means a compressed value that does not decode: damage.
func decodeValue(v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, compressedPrefix) {
		return v, nil
	}
	_, dec, err := codec()
	if err != nil {
		return nil, err
	}
	out, err := dec.DecodeAll(v[1:], nil)
	if err != nil {
		return nil, fmt.Errorf("compressed value does not decode: %w", err)
	}
	return out, nil
}
