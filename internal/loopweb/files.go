package loopweb

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// files serves one host's directory tree the way nginx serves the corpus
// (static files, index.html, autoindex on).
type files struct {
	root    *os.Root
	rewrite *strings.Replacer // port-less loopback links; nil: off
}

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) || hasDotDot(p) {
		http.Error(w, "400 bad request", http.StatusBadRequest)
		return
	}
	name := strings.TrimPrefix(path.Clean(p), "/")
	if name == "" {
		name = "."
	}
	fi, err := f.root.Stat(name) // follows symbolic links inside the root
	if err != nil {
		fail(w, err)
		return
	}
	switch {
	case fi.IsDir():
		if !strings.HasSuffix(p, "/") {
			target := r.URL.EscapedPath() + "/"
			if r.URL.RawQuery != "" {
				target += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, target, http.StatusMovedPermanently)
			return
		}
		index := path.Join(name, "index.html")
		ifi, err := f.root.Stat(index)
		switch {
		case err == nil && ifi.Mode().IsRegular():
			f.serveFile(w, r, index, ifi)
		case err == nil || errors.Is(err, fs.ErrNotExist):
			f.serveListing(w, r, name)
		default:
			fail(w, err)
		}
	case fi.Mode().IsRegular():
		if strings.HasSuffix(p, "/") {
			http.NotFound(w, r)
			return
		}
		f.serveFile(w, r, name, fi)
	default:
		http.NotFound(w, r)
	}
}

// hasDotDot reports whether any segment of the slash-separated path is "..".
func hasDotDot(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// fail answers a file system error: 403 for permissions, otherwise 404
// (missing files, a file used as a directory, links leaving the root).
func fail(w http.ResponseWriter, err error) {
	if errors.Is(err, fs.ErrPermission) {
		http.Error(w, "403 forbidden", http.StatusForbidden)
		return
	}
	http.Error(w, "404 page not found", http.StatusNotFound)
}

// contentTypes are the types nginx's mime.types gives the corpus's
// extensions, with a UTF-8 charset on text.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".htm":  "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "application/javascript; charset=utf-8",
	".txt":  "text/plain; charset=utf-8",
	".xml":  "text/xml; charset=utf-8",
	".json": "application/json",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".ico":  "image/x-icon",
	".pdf":  "application/pdf",
}

// contentType returns the Content-Type for a file name by its extension;
// unknown extensions get nginx's default_type.
func contentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := contentTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

func (f *files) serveFile(w http.ResponseWriter, r *http.Request, name string, fi fs.FileInfo) {
	file, err := f.root.Open(name)
	if err != nil {
		fail(w, err)
		return
	}
	defer file.Close()
	ctype := contentType(name)
	w.Header().Set("Content-Type", ctype)
	if f.rewrite != nil && strings.HasPrefix(ctype, "text/html") {
		body, err := io.ReadAll(file)
		if err != nil {
			http.Error(w, "500 internal server error", http.StatusInternalServerError)
			return
		}
		if bytes.Contains(body, []byte("http://127.")) {
			rewritten := f.rewrite.Replace(string(body))
			if rewritten != string(body) {
				// The bytes depend on the ports: no ETag for them.
				http.ServeContent(w, r, name, fi.ModTime(), strings.NewReader(rewritten))
				return
			}
		}
		w.Header().Set("ETag", etag(fi.ModTime(), int64(len(body))))
		http.ServeContent(w, r, name, fi.ModTime(), bytes.NewReader(body))
		return
	}
	w.Header().Set("ETag", etag(fi.ModTime(), fi.Size()))
	http.ServeContent(w, r, name, fi.ModTime(), file)
}

// etag is nginx's entity tag: hex modification time and size.
func etag(mod time.Time, size int64) string {
	return `"` + strconv.FormatInt(mod.Unix(), 16) + "-" + strconv.FormatInt(size, 16) + `"`
}

type listEntry struct {
	name string
	dir  bool
	size int64
	mod  time.Time
}

// serveListing writes an nginx autoindex page for directory name.
func (f *files) serveListing(w http.ResponseWriter, r *http.Request, name string) {
	d, err := f.root.Open(name)
	if err != nil {
		fail(w, err)
		return
	}
	des, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		http.Error(w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	entries := make([]listEntry, 0, len(des))
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			continue // nginx autoindex hides dot files
		}
		fi, err := f.root.Stat(path.Join(name, de.Name()))
		if err != nil { // broken or escaping link: describe the link itself
			if fi, err = de.Info(); err != nil {
				continue
			}
		}
		entries = append(entries, listEntry{name: de.Name(), dir: fi.IsDir(), size: fi.Size(), mod: fi.ModTime()})
	}
	slices.SortFunc(entries, func(a, b listEntry) int {
		if a.dir != b.dir {
			if a.dir {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})

	var b bytes.Buffer
	title := html.EscapeString(r.URL.Path)
	fmt.Fprintf(&b, "<html>\r\n<head><title>Index of %s</title></head>\r\n<body>\r\n<h1>Index of %s</h1><hr><pre>", title, title)
	if r.URL.Path != "/" {
		b.WriteString("<a href=\"../\">../</a>\r\n")
	}
	for _, e := range entries {
		display, size := e.name, strconv.FormatInt(e.size, 10)
		if e.dir {
			display, size = e.name+"/", "-"
		}
		href := (&url.URL{Path: display}).String() // "./" before a name with a colon
		pad := 51 - len([]rune(display))
		if pad < 1 {
			pad = 1
		}
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>%s%s %19s\r\n",
			html.EscapeString(href), html.EscapeString(display), strings.Repeat(" ", pad),
			e.mod.UTC().Format("02-Jan-2006 15:04"), size)
	}
	b.WriteString("</pre><hr></body>\r\n</html>\r\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}
