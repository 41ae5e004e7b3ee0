package loopweb_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/horseshoe-crawler/horseshoe/internal/loopweb"
)

func ExampleStart() {
	w, err := loopweb.Start("../../testdata/demo", loopweb.Options{
		Robots: map[string]string{"127.0.0.4": "User-agent: *\nDisallow: /blog/2025/\n"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	fmt.Println(w.Hosts())
	for _, u := range []string{
		w.URL("127.0.0.2", "/guide/"),
		w.URL("127.0.0.3", "/mirror/guide/glossary.html"),
		w.URL("127.0.0.4", "/robots.txt"),
	} {
		resp, err := client.Get(u)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for _, r := range w.Requests() {
		fmt.Println(r.Host, r.Method, r.Path, r.Status)
	}
	// Output:
	// [127.0.0.2 127.0.0.3 127.0.0.4]
	// 127.0.0.2 GET /guide/ 200
	// 127.0.0.3 GET /mirror/guide/glossary.html 404
	// 127.0.0.4 GET /robots.txt 200
}
