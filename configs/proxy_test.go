package configs

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The proxy's password must not reach the stored config (and the WARC's warcinfo record).
func TestProxyPasswordNotWritten(t *testing.T) {
	for _, p := range []string{"http://crawler:s3cret@proxy.example:3128", "socks5://crawler:s3cret@127.0.0.1:1080",
		"crawler:s3cret@proxy.example:3128", "http://crawler:s3cret@bad host"} {
		var c Config
		c.Fetch.Proxy = ProxyURL(p)
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("%s: marshalled config shows the password:\n%s", p, b)
		}
	}
	var c Config
	c.Fetch.Proxy = "http://proxy.example:3128"
	b, _ := yaml.Marshal(c)
	if !strings.Contains(string(b), "proxy: http://proxy.example:3128") {
		t.Errorf("a proxy without credentials is written as given:\n%s", b)
	}
}
