package redisstate

import (
	"testing"

	"github.com/horseshoe-crawler/horseshoe/frontier"
)

// FuzzDecodeItem: a queue item read back from Redis, whatever its bytes,
// decodes or is refused with an error, never a panic; what decodes encodes
// and decodes to the same item.
func FuzzDecodeItem(f *testing.F) {
	for _, it := range []frontier.Item{
		{ID: 1, URL: "http://a.example/"},
		{ID: 1 << 50, URL: "http://a.example/x?y", Via: "http://b.example/", Depth: 7, Hops: 2, Tries: 3, Verify: true, FetchURL: "http://a.example/x;s=1"},
	} {
		f.Add(EncodeItem(&it))
	}
	f.Add("")
	f.Add("\x01\xff\xff\xff")
	f.Fuzz(func(t *testing.T, s string) {
		it, err := DecodeItem(s, "h")
		if err != nil {
			return
		}
		again, err := DecodeItem(EncodeItem(&it), "h")
		if err != nil || again != it {
			t.Fatalf("%q: decoded %+v, re-encoded decodes to %+v (%v)", s, it, again, err)
		}
	})
}
