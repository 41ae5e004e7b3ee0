package parse

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/net/html"
	a "golang.org/x/net/html/atom"
)

// The streaming pass reads a page with one pass over x/net/html's tokens and hands the
// collector the same sequence of element starts, element ends and text nodes that a
// walk over the tree of html.Parse would, without building the tree.
//
// It follows the tree builder of golang.org/x/net/html (v0.47.0, parse.go) step by step
// on a light stack of open elements, for the insertion modes an ordinary page goes
// through: before and in head, in body, text, the table modes (table, caption, column
// group, table body, row, cell), after body, and SVG foreign content. Where the tree
// builder would do something a stream cannot replay in order (foster parenting of
// content misplaced in a table, the adoption agency's reparenting of misnested
// formatting elements, re-opening formatting elements closed by a block, <template>,
// <select>, <frameset>, MathML, attributes merged into <html> or <body> by a later tag,
// a form removed from the middle of the stack, quirks-mode tables, nesting near the
// parser's limit) it gives up, and Parse reads the page with the tree instead. The
// differential tests (stream_test.go) hold the two ways to the same Document on the
// corpus and on fuzzed markup.
//
// The tree merges adjacent text into one node when nothing was inserted between them
// (an ignored tag, say), and the collector's text rules see a node whole, so the stream
// holds text back (pending) until the next node is inserted or an element ends.

// streamMaxDepth bounds the stack of the streaming pass; deeper pages go to the tree
// path (whose parser stops at 512 open elements and falls back to shallowTree).
const streamMaxDepth = 400

type imode uint8

const (
	modeInitial imode = iota
	modeBeforeHTML
	modeBeforeHead
	modeInHead
	modeAfterHead
	modeInBody
	modeText
	modeInTable
	modeInCaption
	modeInColumnGroup
	modeInTableBody
	modeInRow
	modeInCell
	modeAfterBody
	modeAfterAfterBody
)

// sentry is an open element of the streaming pass.
type sentry struct {
	atom a.Atom
	name string // the lower-case tag name when atom is 0
	svg  bool   // in the SVG namespace
	afe  bool   // in the list of active formatting elements
	form bool   // the element the form element pointer points to
	// headAfter: the head was on the stack below this element only while it was
	// inserted (a head element after </head>); its end ends the head too.
	headAfter bool
}

// afeEntry is an entry of the list of active formatting elements: a marker, or an
// element with what it takes to re-open it (its name and attributes).
type afeEntry struct {
	marker bool
	idx    int // stack index, or -1 once the element is closed
	id     int
	atom   a.Atom
	a0, a1 int // attributes: spans[a0:a1]
}

type attrSpan struct{ k0, k1, v0, v1 int }

// stok is the token being processed.
type stok struct {
	typ         html.TokenType
	atom        a.Atom
	name        []byte           // lower-case tag name
	data        []byte           // text
	attr        []html.Attribute // values alias the tokenizer's buffer
	selfClosing bool
}

type streamer struct {
	z        *html.Tokenizer
	c        collector
	st       []sentry
	afe      []afeEntry // the list of active formatting elements
	afeSeq   int
	arena    []byte     // attribute bytes of the active formatting elements
	spans    []attrSpan // their attributes, in arena
	clone    []html.Attribute
	mode     imode
	origMode imode
	headSeen bool // the head element pointer is set
	formPtr  bool // the form element pointer is set
	tok      stok
	attrs    []html.Attribute
	pending  []byte // text of a text node not yet handed to the collector
	fail     bool   // gave up: the tree path must read this page
}

var streamPool = sync.Pool{New: func() any { return new(streamer) }}

// streamCollect reads body in one streaming pass. It reports false if the page needs
// the tree path; otherwise the caller must release the streamer after using s.c.
func streamCollect(body []byte, botName string) (*streamer, bool) {
	s := streamPool.Get().(*streamer)
	s.c.reset(botName, true)
	s.st = s.st[:0]
	s.afe = s.afe[:0]
	s.arena = s.arena[:0]
	s.spans = s.spans[:0]
	s.mode, s.origMode = modeInitial, modeInitial
	s.headSeen, s.formPtr, s.fail = false, false, false
	s.pending = s.pending[:0]
	s.z = html.NewTokenizer(bytes.NewReader(body))
	for {
		s.z.AllowCDATA(len(s.st) > 0 && s.st[len(s.st)-1].svg)
		tt := s.z.Next()
		if tt == html.ErrorToken && s.z.Err() != io.EOF {
			s.fail = true
		} else {
			s.readToken(tt)
			s.process()
		}
		if s.fail {
			s.release()
			return nil, false
		}
		if tt == html.ErrorToken {
			break
		}
	}
	s.flush()
	for range s.c.open {
		s.c.end()
	}
	s.z = nil
	return s, true
}

func (s *streamer) release() {
	s.z = nil
	s.tok = stok{}
	clear(s.attrs[:cap(s.attrs)])
	s.c.reset("", false)
	streamPool.Put(s)
}

// bstr returns b as a string without copying; it is valid while b is.
func bstr(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (s *streamer) readToken(tt html.TokenType) {
	t := &s.tok
	*t = stok{typ: tt}
	switch tt {
	case html.TextToken, html.CommentToken, html.DoctypeToken:
		t.data = s.z.Text()
	case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
		name, more := s.z.TagName()
		t.name = name
		t.atom = a.Lookup(name)
		s.attrs = s.attrs[:0]
		for more {
			var k, v []byte
			k, v, more = s.z.TagAttr()
			s.attrs = append(s.attrs, html.Attribute{Key: bstr(k), Val: bstr(v)})
		}
		t.attr = s.attrs
		if tt == html.SelfClosingTagToken {
			t.typ = html.StartTagToken
			t.selfClosing = true
		}
	}
}

// process runs the current token through the insertion modes until it is consumed,
// as the parser's parseCurrentToken does.
func (s *streamer) process() {
	for range 64 {
		if s.fail {
			return
		}
		var done bool
		if s.inForeign() {
			done = s.foreign()
		} else {
			done = s.dispatch()
		}
		if done {
			return
		}
	}
	s.fail = true
}

// implied processes a token that is not in the input (parseImpliedToken).
func (s *streamer) implied(typ html.TokenType, at a.Atom) {
	saved := s.tok
	s.tok = stok{typ: typ, atom: at}
	s.process()
	s.tok = saved
}

func (s *streamer) dispatch() bool {
	switch s.mode {
	case modeInitial:
		return s.initial()
	case modeBeforeHTML:
		return s.beforeHTML()
	case modeBeforeHead:
		return s.beforeHead()
	case modeInHead:
		return s.inHead()
	case modeAfterHead:
		return s.afterHead()
	case modeInBody:
		return s.inBody()
	case modeText:
		return s.text()
	case modeInTable:
		return s.inTable()
	case modeInCaption:
		return s.inCaption()
	case modeInColumnGroup:
		return s.inColumnGroup()
	case modeInTableBody:
		return s.inTableBody()
	case modeInRow:
		return s.inRow()
	case modeInCell:
		return s.inCell()
	case modeAfterBody:
		return s.afterBody()
	case modeAfterAfterBody:
		return s.afterAfterBody()
	}
	return s.bail()
}

func (s *streamer) bail() bool {
	s.fail = true
	return true
}

// --- the stack and the collector ---

func (s *streamer) top() *sentry {
	if len(s.st) == 0 {
		return nil
	}
	return &s.st[len(s.st)-1]
}

func (s *streamer) topAtom() a.Atom {
	if t := s.top(); t != nil {
		return t.atom
	}
	return 0
}

// flush hands pending text to the collector as one text node.
func (s *streamer) flush() {
	if len(s.pending) > 0 {
		s.c.addText(bstr(s.pending))
		s.pending = s.pending[:0]
	}
}

// addText appends text to the current node (merged with a text node before it).
func (s *streamer) addText(d []byte) {
	s.pending = append(s.pending, d...)
}

// addComment inserts a comment into the current node: a node between two texts.
func (s *streamer) addComment() {
	s.flush()
}

// push inserts an element for the current token (HTML namespace unless svg).
func (s *streamer) push(svg bool) {
	s.pushElem(s.tok.atom, s.tok.name, s.tok.attr, svg)
}

func (s *streamer) pushElem(at a.Atom, name []byte, attrs []html.Attribute, svg bool) {
	if len(s.st) >= streamMaxDepth {
		s.fail = true
		return
	}
	s.flush()
	e := sentry{atom: at, svg: svg}
	var data string
	if at != 0 {
		data = at.String()
	} else {
		data = internName(name)
		e.name = data
	}
	ns := ""
	if svg {
		ns = "svg"
	}
	s.c.start(&elem{atom: at, data: data, ns: ns, attr: attrs})
	s.st = append(s.st, e)
}

// pushVoid inserts an element that is closed at once.
func (s *streamer) pushVoid() {
	s.push(false)
	s.pop()
}

// pop ends the current node.
func (s *streamer) pop() {
	s.popTo(len(s.st) - 1)
}

// popTo ends the elements at stack index i and above. An active formatting element
// closed this way stays on the list, to be re-opened by reconstruct.
func (s *streamer) popTo(i int) {
	if i < 0 {
		s.fail = true
		return
	}
	for len(s.st) > i {
		e := s.st[len(s.st)-1]
		if e.afe {
			for j := range s.afe {
				if s.afe[j].idx == len(s.st)-1 {
					s.afe[j].idx = -1
				}
			}
		}
		s.flush()
		s.c.end()
		if e.headAfter {
			s.c.end()
		}
		s.st = s.st[:len(s.st)-1]
	}
}

// afeRemove removes entry j from the list of active formatting elements.
func (s *streamer) afeRemove(j int) {
	if i := s.afe[j].idx; i >= 0 {
		s.st[i].afe = false
	}
	s.afe = append(s.afe[:j], s.afe[j+1:]...)
}

func (s *streamer) pushMarker() {
	s.afe = append(s.afe, afeEntry{marker: true, idx: -1})
}

// clearAFE clears the list of active formatting elements up to the last marker.
func (s *streamer) clearAFE() {
	for len(s.afe) > 0 {
		e := s.afe[len(s.afe)-1]
		s.afe = s.afe[:len(s.afe)-1]
		if e.marker {
			return
		}
		if e.idx >= 0 {
			s.st[e.idx].afe = false
		}
	}
}

// lastAFE returns the index in the list of the last active formatting element named
// at after the last marker, or -1.
func (s *streamer) lastAFE(at a.Atom) int {
	for j := len(s.afe) - 1; j >= 0 && !s.afe[j].marker; j-- {
		if s.afe[j].atom == at {
			return j
		}
	}
	return -1
}

// addFormatting inserts a formatting element and puts it on the list. With three of
// the same name already there, the tree builder may drop the earliest (Noah's Ark,
// which compares attributes): the stream gives up.
func (s *streamer) addFormatting() {
	if s.fail {
		return
	}
	n := 0
	for j := len(s.afe) - 1; j >= 0 && !s.afe[j].marker; j-- {
		if s.afe[j].atom == s.tok.atom {
			n++
		}
	}
	if n >= 3 {
		s.fail = true
		return
	}
	s.push(false)
	if s.fail {
		return
	}
	a0 := len(s.spans)
	for _, at := range s.tok.attr {
		sp := attrSpan{k0: len(s.arena)}
		s.arena = append(s.arena, at.Key...)
		sp.k1 = len(s.arena)
		sp.v0 = sp.k1
		s.arena = append(s.arena, at.Val...)
		sp.v1 = len(s.arena)
		s.spans = append(s.spans, sp)
	}
	s.afeSeq++
	s.st[len(s.st)-1].afe = true
	s.afe = append(s.afe, afeEntry{idx: len(s.st) - 1, id: s.afeSeq, atom: s.tok.atom, a0: a0, a1: len(s.spans)})
}

// reconstruct re-opens the active formatting elements closed since they were opened
// (after the last marker), as clones with the same attributes.
func (s *streamer) reconstruct() {
	n := len(s.afe)
	if n == 0 || s.afe[n-1].marker || s.afe[n-1].idx >= 0 || s.fail {
		return
	}
	i := n - 1
	for i >= 0 && !s.afe[i].marker && s.afe[i].idx < 0 {
		i--
	}
	for i++; i < n && !s.fail; i++ {
		e := &s.afe[i]
		s.clone = s.clone[:0]
		for _, sp := range s.spans[e.a0:e.a1] {
			s.clone = append(s.clone, html.Attribute{Key: bstr(s.arena[sp.k0:sp.k1]), Val: bstr(s.arena[sp.v0:sp.v1])})
		}
		s.pushElem(e.atom, nil, s.clone, false)
		if s.fail {
			return
		}
		s.st[len(s.st)-1].afe = true
		e.idx = len(s.st) - 1
	}
}

// adopt is the adoption agency algorithm (inBodyEndTagFormatting) where it closes
// elements without moving any: the formatting element is the current node, or no
// special element is open above it. With one (the "furthest block") the tree builder
// moves nodes already read: the stream gives up.
func (s *streamer) adopt(at a.Atom) {
	if top := s.top(); top != nil && top.atom == at && !top.afe {
		s.pop()
		return
	}
	j := s.lastAFE(at)
	if j < 0 {
		s.endTagOther()
		return
	}
	fe := s.afe[j].idx
	if fe < 0 {
		s.afeRemove(j)
		return
	}
	if !s.inScope(defaultScope, at) {
		return
	}
	for i := fe + 1; i < len(s.st); i++ {
		if isSpecial(&s.st[i]) {
			s.fail = true
			return
		}
	}
	s.afeRemove(j)
	s.popTo(fe)
}

type scope uint8

const (
	defaultScope scope = iota
	listItemScope
	buttonScope
	tableScope
	selectScope
)

// indexInScope is the parser's indexOfElementInScope.
func (s *streamer) indexInScope(sc scope, match ...a.Atom) int {
	for i := len(s.st) - 1; i >= 0; i-- {
		e := &s.st[i]
		at := e.atom
		if !e.svg {
			for _, m := range match {
				if m == at {
					return i
				}
			}
			switch sc {
			case listItemScope:
				if at == a.Ol || at == a.Ul {
					return -1
				}
			case buttonScope:
				if at == a.Button {
					return -1
				}
			case tableScope:
				if at == a.Html || at == a.Table || at == a.Template {
					return -1
				}
			case selectScope:
				if at != a.Optgroup && at != a.Option {
					return -1
				}
			}
		}
		switch sc {
		case defaultScope, listItemScope, buttonScope:
			if e.svg {
				if at == a.Desc || at == a.Title {
					return -1
				}
			} else {
				switch at {
				case a.Applet, a.Caption, a.Html, a.Table, a.Td, a.Th, a.Marquee, a.Object, a.Template:
					return -1
				}
			}
		}
	}
	return -1
}

func (s *streamer) inScope(sc scope, match ...a.Atom) bool {
	return s.indexInScope(sc, match...) != -1
}

func (s *streamer) popUntil(sc scope, match ...a.Atom) bool {
	if i := s.indexInScope(sc, match...); i != -1 {
		s.popTo(i)
		return true
	}
	return false
}

// popUntilClearing is popUntil followed by clearing the active formatting elements to
// the last marker.
func (s *streamer) popUntilClearing(sc scope, match ...a.Atom) bool {
	if i := s.indexInScope(sc, match...); i != -1 {
		s.popTo(i)
		s.clearAFE()
		return true
	}
	return false
}

func (s *streamer) contains(at a.Atom) bool {
	for i := range s.st {
		if s.st[i].atom == at {
			return true
		}
	}
	return false
}

// clearStackTo pops elements until one of stop is the current node.
func (s *streamer) clearStackTo(stop ...a.Atom) {
	for i := len(s.st) - 1; i >= 0; i-- {
		for _, at := range stop {
			if s.st[i].atom == at {
				s.popTo(i + 1)
				return
			}
		}
	}
}

func (s *streamer) generateImpliedEndTags(except a.Atom) {
	for len(s.st) > 0 && !s.fail {
		switch at := s.topAtom(); at {
		case a.Dd, a.Dt, a.Li, a.Optgroup, a.Option, a.P, a.Rb, a.Rp, a.Rt, a.Rtc:
			if at == except {
				return
			}
			s.pop()
			continue
		}
		return
	}
}

func (s *streamer) resetInsertionMode() {
	for i := len(s.st) - 1; i >= 0; i-- {
		e := &s.st[i]
		switch e.atom {
		case a.Select, a.Frameset:
			s.fail = true
		case a.Td, a.Th:
			s.mode = modeInCell
		case a.Tr:
			s.mode = modeInRow
		case a.Tbody, a.Thead, a.Tfoot:
			s.mode = modeInTableBody
		case a.Caption:
			s.mode = modeInCaption
		case a.Colgroup:
			s.mode = modeInColumnGroup
		case a.Table:
			s.mode = modeInTable
		case a.Template:
			if e.svg {
				continue
			}
			s.fail = true
		case a.Head:
			s.mode = modeInHead
		case a.Body:
			s.mode = modeInBody
		case a.Html:
			if s.headSeen {
				s.mode = modeAfterHead
			} else {
				s.mode = modeBeforeHead
			}
		default:
			if i == 0 {
				s.mode = modeInBody
				return
			}
			continue
		}
		return
	}
}

// isSpecial is the parser's isSpecialElement.
func isSpecial(e *sentry) bool {
	if e.svg {
		return e.atom == a.Desc || e.atom == a.Title
	}
	switch e.atom {
	case a.Address, a.Applet, a.Area, a.Article, a.Aside, a.Base, a.Basefont, a.Bgsound,
		a.Blockquote, a.Body, a.Br, a.Button, a.Caption, a.Center, a.Col, a.Colgroup, a.Dd,
		a.Details, a.Dir, a.Div, a.Dl, a.Dt, a.Embed, a.Fieldset, a.Figcaption, a.Figure,
		a.Footer, a.Form, a.Frame, a.Frameset, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6, a.Head,
		a.Header, a.Hgroup, a.Hr, a.Html, a.Iframe, a.Img, a.Input, a.Keygen, a.Li, a.Link,
		a.Listing, a.Main, a.Marquee, a.Menu, a.Meta, a.Nav, a.Noembed, a.Noframes,
		a.Noscript, a.Object, a.Ol, a.P, a.Param, a.Plaintext, a.Pre, a.Script, a.Section,
		a.Select, a.Source, a.Style, a.Summary, a.Table, a.Tbody, a.Td, a.Template,
		a.Textarea, a.Tfoot, a.Th, a.Thead, a.Title, a.Tr, a.Track, a.Ul, a.Wbr, a.Xmp:
		return true
	}
	return false
}

// --- text helpers ---

const whitespace = " \t\r\n\f"

func trimLeftWS(b []byte) []byte {
	return bytes.TrimLeft(b, whitespace)
}

// removeNUL drops the NUL bytes of b in place.
func removeNUL(b []byte) []byte {
	if bytes.IndexByte(b, 0) < 0 {
		return b
	}
	out := b[:0]
	for _, c := range b {
		if c != 0 {
			out = append(out, c)
		}
	}
	return out
}

// splitWS inserts the leading white space of a text token into the current node and
// leaves the rest as the token; it reports whether nothing is left.
func (s *streamer) splitWS() bool {
	d := s.tok.data
	rest := trimLeftWS(d)
	if len(rest) < len(d) {
		s.addText(d[:len(d)-len(rest)])
		if len(rest) == 0 {
			return true
		}
		s.tok.data = rest
	}
	return false
}

func (s *streamer) hasAttrs() bool { return len(s.tok.attr) > 0 }

func (s *streamer) attrVal(key string) (string, bool) {
	for _, at := range s.tok.attr {
		if at.Key == key {
			return at.Val, true
		}
	}
	return "", false
}

// --- insertion modes (x/net/html parse.go, section numbers of the HTML standard) ---

func (s *streamer) initial() bool {
	switch s.tok.typ {
	case html.TextToken:
		if s.trimTokenWS() {
			return true
		}
	case html.CommentToken:
		return true
	case html.DoctypeToken:
		s.mode = modeBeforeHTML
		return true
	}
	s.mode = modeBeforeHTML
	return false
}

func (s *streamer) beforeHTML() bool {
	switch s.tok.typ {
	case html.DoctypeToken:
		return true
	case html.TextToken:
		if s.trimTokenWS() {
			return true
		}
	case html.StartTagToken:
		if s.tok.atom == a.Html {
			s.push(false)
			s.mode = modeBeforeHead
			return true
		}
	case html.EndTagToken:
		return s.impliedByEndTag(a.Html)
	case html.CommentToken:
		return true
	}
	s.implied(html.StartTagToken, a.Html)
	return false
}

func (s *streamer) beforeHead() bool {
	switch s.tok.typ {
	case html.TextToken:
		if s.trimTokenWS() {
			return true
		}
	case html.StartTagToken:
		switch s.tok.atom {
		case a.Head:
			s.push(false)
			s.headSeen = true
			s.mode = modeInHead
			return true
		case a.Html:
			return s.inBody()
		}
	case html.EndTagToken:
		return s.impliedByEndTag(a.Head)
	case html.CommentToken, html.DoctypeToken:
		return s.commentOrDoctype()
	}
	s.implied(html.StartTagToken, a.Head)
	return false
}

// trimTokenWS drops the leading white space of a text token, which the modes before
// the head ignore, and reports whether nothing is left.
func (s *streamer) trimTokenWS() bool {
	s.tok.data = trimLeftWS(s.tok.data)
	return len(s.tok.data) == 0
}

// impliedByEndTag is an end tag before html or before head: head, body, html and br
// imply the element at (the token is then processed again), others are ignored.
func (s *streamer) impliedByEndTag(at a.Atom) bool {
	switch s.tok.atom {
	case a.Head, a.Body, a.Html, a.Br:
		s.implied(html.StartTagToken, at)
		return false
	}
	return true
}

// commentOrDoctype is a comment or a doctype from before head to in column group: a
// comment is inserted, a doctype ignored.
func (s *streamer) commentOrDoctype() bool {
	if s.tok.typ == html.CommentToken {
		s.addComment()
	}
	return true
}

// rawText inserts an element whose content the tokenizer reads as text.
func (s *streamer) rawText() {
	s.push(false)
	s.origMode = s.mode
	s.mode = modeText
}

func (s *streamer) inHead() bool {
	switch s.tok.typ {
	case html.TextToken:
		if s.splitWS() {
			return true
		}
	case html.StartTagToken:
		switch s.tok.atom {
		case a.Html:
			return s.inBody()
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta:
			s.pushVoid()
			return true
		case a.Noscript, a.Script, a.Title, a.Noframes, a.Style:
			s.rawText() // noscript: the parser runs with scripting enabled
			return true
		case a.Head:
			return true
		case a.Template:
			return s.bail()
		}
	case html.EndTagToken:
		switch s.tok.atom {
		case a.Head:
			s.pop()
			s.mode = modeAfterHead
			return true
		case a.Body, a.Html, a.Br:
			s.implied(html.EndTagToken, a.Head)
			return false
		case a.Template:
			if s.contains(a.Template) {
				return s.bail()
			}
			return true
		default:
			return true
		}
	case html.CommentToken, html.DoctypeToken:
		return s.commentOrDoctype()
	}
	s.implied(html.EndTagToken, a.Head)
	return false
}

func (s *streamer) afterHead() bool {
	switch s.tok.typ {
	case html.TextToken:
		if s.splitWS() {
			return true
		}
	case html.StartTagToken:
		switch s.tok.atom {
		case a.Html:
			return s.inBody()
		case a.Body:
			s.push(false)
			s.mode = modeInBody
			return true
		case a.Frameset, a.Template:
			return s.bail()
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Title:
			// The element goes into the head, which is back on the stack while it
			// is inserted.
			if !s.headSeen {
				return s.bail()
			}
			s.flush()
			s.c.start(&elem{atom: a.Head, data: "head"})
			s.st = append(s.st, sentry{atom: a.Head})
			h := len(s.st) - 1
			s.inHead()
			if s.fail {
				return true
			}
			if len(s.st)-1 == h {
				s.pop()
			} else if len(s.st)-1 == h+1 {
				s.st[h+1].headAfter = true
				s.st = append(s.st[:h], s.st[h+1])
			} else {
				return s.bail()
			}
			return true
		case a.Head:
			return true
		}
	case html.EndTagToken:
		switch s.tok.atom {
		case a.Body, a.Html, a.Br:
		case a.Template:
			return s.inHead()
		default:
			return true
		}
	case html.CommentToken, html.DoctypeToken:
		return s.commentOrDoctype()
	}
	s.implied(html.StartTagToken, a.Body)
	return s.tok.typ == html.ErrorToken
}

// closeP closes a p element in button scope.
func (s *streamer) closeP() {
	s.popUntil(buttonScope, a.P)
}

func (s *streamer) inBody() bool {
	t := &s.tok
	switch t.typ {
	case html.TextToken:
		// A newline at the start of a <pre> or <listing> is dropped by the tree
		// builder; right after the element's start it is white space after a
		// block boundary, which the collector ignores anyway.
		d := removeNUL(t.data)
		if len(d) == 0 {
			return true
		}
		s.reconstruct()
		s.addText(d)
	case html.StartTagToken:
		switch t.atom {
		case a.Html:
			if s.hasAttrs() {
				return s.bail() // the attributes would be merged into <html>
			}
		case a.Base, a.Basefont, a.Bgsound, a.Link, a.Meta, a.Noframes, a.Script, a.Style, a.Template, a.Title:
			return s.inHead()
		case a.Body:
			if s.hasAttrs() {
				return s.bail()
			}
		case a.Frameset, a.Plaintext, a.Image, a.Select, a.Math, a.Rb, a.Rtc, a.Rp, a.Rt:
			return s.bail()
		case a.Address, a.Article, a.Aside, a.Blockquote, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Main, a.Menu, a.Nav, a.Ol, a.P, a.Search, a.Section, a.Summary, a.Ul:
			s.closeP()
			s.push(false)
		case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
			s.closeP()
			switch s.topAtom() {
			case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
				s.pop()
			}
			s.push(false)
		case a.Pre, a.Listing:
			s.closeP()
			s.push(false)
		case a.Form:
			if s.formPtr {
				return true
			}
			s.closeP()
			s.push(false)
			if !s.fail {
				s.formPtr = true
				s.st[len(s.st)-1].form = true
			}
		case a.Li, a.Dd, a.Dt:
			for i := len(s.st) - 1; i >= 0; i-- {
				e := &s.st[i]
				if t.atom == a.Li && e.atom == a.Li && !e.svg ||
					t.atom != a.Li && (e.atom == a.Dd || e.atom == a.Dt) && !e.svg {
					s.popTo(i)
					break
				}
				if !e.svg && (e.atom == a.Address || e.atom == a.Div || e.atom == a.P) {
					continue
				}
				if isSpecial(e) {
					break
				}
			}
			s.closeP()
			s.push(false)
		case a.Button:
			s.popUntil(defaultScope, a.Button)
			s.reconstruct()
			s.push(false)
		case a.A:
			if j := s.lastAFE(a.A); j >= 0 {
				// The open <a> is closed, and must be off the stack and
				// the list afterwards.
				id, n := s.afe[j].id, s.afe[j].idx
				s.adopt(a.A)
				if n >= 0 && n < len(s.st) {
					return s.bail()
				}
				for k := range s.afe {
					if s.afe[k].id == id && !s.afe[k].marker {
						s.afeRemove(k)
						break
					}
				}
			}
			s.reconstruct()
			s.addFormatting()
		case a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
			s.reconstruct()
			s.addFormatting()
		case a.Nobr:
			s.reconstruct()
			if s.inScope(defaultScope, a.Nobr) {
				s.adopt(a.Nobr)
				s.reconstruct()
			}
			s.addFormatting()
		case a.Applet, a.Marquee, a.Object:
			s.reconstruct()
			s.push(false)
			s.pushMarker()
		case a.Table:
			if s.inScope(buttonScope, a.P) {
				return s.bail() // closed or not depending on quirks mode
			}
			s.push(false)
			s.mode = modeInTable
			return true
		case a.Area, a.Br, a.Embed, a.Img, a.Input, a.Keygen, a.Wbr:
			s.reconstruct()
			s.pushVoid()
		case a.Param, a.Source, a.Track:
			s.pushVoid()
		case a.Hr:
			s.closeP()
			s.pushVoid()
		case a.Textarea, a.Iframe, a.Noembed, a.Noscript:
			s.rawText()
		case a.Xmp:
			s.closeP()
			s.reconstruct()
			s.rawText()
		case a.Optgroup, a.Option:
			if s.topAtom() == a.Option {
				s.pop()
			}
			s.reconstruct()
			s.push(false)
		case a.Svg:
			s.reconstruct()
			s.push(true)
			if t.selfClosing {
				s.pop()
			}
			return true
		case a.Caption, a.Col, a.Colgroup, a.Frame, a.Head, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			// Ignored.
		default:
			s.reconstruct()
			s.push(false)
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Body:
			if s.inScope(defaultScope, a.Body) {
				s.mode = modeAfterBody
			}
		case a.Html:
			if s.inScope(defaultScope, a.Body) {
				s.implied(html.EndTagToken, a.Body)
				return false
			}
			return true
		case a.Address, a.Article, a.Aside, a.Blockquote, a.Button, a.Center, a.Details, a.Dialog, a.Dir, a.Div, a.Dl, a.Fieldset, a.Figcaption, a.Figure, a.Footer, a.Header, a.Hgroup, a.Listing, a.Main, a.Menu, a.Nav, a.Ol, a.Pre, a.Search, a.Section, a.Summary, a.Ul:
			s.popUntil(defaultScope, t.atom)
		case a.Form:
			had := s.formPtr
			s.formPtr = false
			i := s.indexInScope(defaultScope, a.Form)
			ok := had && i != -1 && s.st[i].form
			for j := range s.st {
				s.st[j].form = false
			}
			if !ok {
				return true
			}
			s.generateImpliedEndTags(0)
			if len(s.st)-1 != i {
				return s.bail() // the form leaves the middle of the stack
			}
			s.pop()
		case a.P:
			if !s.inScope(buttonScope, a.P) {
				s.implied(html.StartTagToken, a.P)
			}
			s.popUntil(buttonScope, a.P)
		case a.Li:
			s.popUntil(listItemScope, a.Li)
		case a.Dd, a.Dt:
			s.popUntil(defaultScope, t.atom)
		case a.H1, a.H2, a.H3, a.H4, a.H5, a.H6:
			s.popUntil(defaultScope, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6)
		case a.A, a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
			s.adopt(t.atom)
		case a.Applet, a.Marquee, a.Object:
			s.popUntilClearing(defaultScope, t.atom)
		case a.Br:
			t.typ = html.StartTagToken
			t.attr = nil
			return false
		case a.Template:
			return s.inHead()
		default:
			s.endTagOther()
		}
	case html.CommentToken:
		s.addComment()
	}
	return true
}

// endTagOther is "any other end tag" in body.
func (s *streamer) endTagOther() {
	at := s.tok.atom
	for i := len(s.st) - 1; i >= 0; i-- {
		e := &s.st[i]
		if e.atom == at && (at != 0 || e.name == bstr(s.tok.name)) {
			s.popTo(i)
			return
		}
		if isSpecial(e) {
			return
		}
	}
}

func (s *streamer) text() bool {
	switch s.tok.typ {
	case html.ErrorToken:
		s.pop()
	case html.TextToken:
		// A newline at the start of a <textarea> is dropped by the tree builder;
		// it is white space after the block boundary of the element's start.
		s.addText(s.tok.data)
		return true
	case html.EndTagToken:
		s.pop()
	}
	s.mode = s.origMode
	return s.tok.typ == html.EndTagToken
}

// The stack contexts a table mode clears back to (the parser's clearStackToContext).
var (
	tableContext     = []a.Atom{a.Table, a.Template, a.Html}
	tableBodyContext = []a.Atom{a.Tbody, a.Tfoot, a.Thead, a.Template, a.Html}
	tableRowContext  = []a.Atom{a.Tr, a.Template, a.Html}
)

// openTablePart inserts a caption, column group or table body in table, after clearing
// the stack back to the table (and putting a marker on the list for a caption), and
// switches to its mode m.
func (s *streamer) openTablePart(m imode) bool {
	s.clearStackTo(tableContext...)
	if m == modeInCaption {
		s.pushMarker()
	}
	s.push(false)
	s.mode = m
	return true
}

// closeCaption closes the caption if one is in table scope, and reports whether it did.
func (s *streamer) closeCaption() bool {
	if !s.popUntilClearing(tableScope, a.Caption) {
		return false
	}
	s.mode = modeInTable
	return true
}

// closeColgroup closes the column group if it is the current node, and reports
// whether it did.
func (s *streamer) closeColgroup() bool {
	if s.topAtom() != a.Colgroup {
		return false
	}
	s.pop()
	s.mode = modeInTable
	return true
}

// closeTableBody closes the table body (tbody, thead or tfoot) in table scope, if one
// is, and reports whether it did.
func (s *streamer) closeTableBody() bool {
	if !s.popUntil(tableScope, a.Tbody, a.Thead, a.Tfoot) {
		return false
	}
	s.mode = modeInTable
	return true
}

// closeRow closes the row, with what is open in it, if one is in table scope, and
// reports whether it did.
func (s *streamer) closeRow() bool {
	if !s.inScope(tableScope, a.Tr) {
		return false
	}
	s.clearStackTo(tableRowContext...)
	s.pop()
	s.mode = modeInTableBody
	return true
}

// closeCell closes the cell (the last of match in table scope), if there is one, and
// reports whether it did.
func (s *streamer) closeCell(match ...a.Atom) bool {
	if !s.popUntilClearing(tableScope, match...) {
		return false
	}
	s.mode = modeInRow
	return true
}

func (s *streamer) inTable() bool {
	t := &s.tok
	switch t.typ {
	case html.TextToken:
		t.data = removeNUL(t.data)
		switch s.topAtom() {
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			if len(bytes.Trim(t.data, whitespace)) == 0 {
				s.addText(t.data)
				return true
			}
		}
	case html.StartTagToken:
		switch t.atom {
		case a.Caption:
			return s.openTablePart(modeInCaption)
		case a.Colgroup:
			return s.openTablePart(modeInColumnGroup)
		case a.Col:
			s.implied(html.StartTagToken, a.Colgroup)
			return false
		case a.Tbody, a.Tfoot, a.Thead:
			return s.openTablePart(modeInTableBody)
		case a.Td, a.Th, a.Tr:
			s.implied(html.StartTagToken, a.Tbody)
			return false
		case a.Table:
			if s.popUntil(tableScope, a.Table) {
				s.resetInsertionMode()
				return false
			}
			return true
		case a.Style, a.Script, a.Template:
			return s.inHead()
		case a.Input:
			if v, ok := s.attrVal("type"); ok && strings.EqualFold(v, "hidden") {
				s.pushVoid()
				return true
			}
		case a.Form:
			if s.formPtr {
				return true
			}
			s.push(false)
			if !s.fail {
				s.st[len(s.st)-1].form = true
				s.formPtr = true
				s.pop()
			}
			return true
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Table:
			if s.popUntil(tableScope, a.Table) {
				s.resetInsertionMode()
			}
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			return true
		case a.Template:
			return s.inHead()
		case a.P, a.Br, a.Form:
			return s.bail() // would insert or move a node in foster-parenting mode
		}
		// Other end tags insert nothing: in body, with the table in the way.
		return s.inBody()
	case html.CommentToken, html.DoctypeToken:
		return s.commentOrDoctype()
	case html.ErrorToken:
		return s.inBody()
	}
	return s.bail() // foster parenting
}

func (s *streamer) inCaption() bool {
	t := &s.tok
	switch t.typ {
	case html.StartTagToken:
		switch t.atom {
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Td, a.Tfoot, a.Thead, a.Tr:
			return !s.closeCaption()
		case a.Select:
			return s.bail()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Caption:
			s.closeCaption()
			return true
		case a.Table:
			return !s.closeCaption()
		case a.Body, a.Col, a.Colgroup, a.Html, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			return true
		}
	}
	return s.inBody()
}

func (s *streamer) inColumnGroup() bool {
	t := &s.tok
	switch t.typ {
	case html.TextToken:
		if s.splitWS() {
			return true
		}
	case html.CommentToken, html.DoctypeToken:
		return s.commentOrDoctype()
	case html.StartTagToken:
		switch t.atom {
		case a.Html:
			return s.inBody()
		case a.Col:
			s.pushVoid()
			return true
		case a.Template:
			return s.inHead()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Colgroup:
			s.closeColgroup()
			return true
		case a.Col:
			return true
		case a.Template:
			return s.inHead()
		}
	case html.ErrorToken:
		return s.inBody()
	}
	return !s.closeColgroup()
}

func (s *streamer) inTableBody() bool {
	t := &s.tok
	switch t.typ {
	case html.StartTagToken:
		switch t.atom {
		case a.Tr:
			s.clearStackTo(tableBodyContext...)
			s.push(false)
			s.mode = modeInRow
			return true
		case a.Td, a.Th:
			s.implied(html.StartTagToken, a.Tr)
			return false
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Tfoot, a.Thead:
			return !s.closeTableBody()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Tbody, a.Tfoot, a.Thead:
			if s.inScope(tableScope, t.atom) {
				s.clearStackTo(tableBodyContext...)
				s.pop()
				s.mode = modeInTable
			}
			return true
		case a.Table:
			return !s.closeTableBody()
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Td, a.Th, a.Tr:
			return true
		}
	case html.CommentToken:
		s.addComment()
		return true
	}
	return s.inTable()
}

func (s *streamer) inRow() bool {
	t := &s.tok
	switch t.typ {
	case html.StartTagToken:
		switch t.atom {
		case a.Td, a.Th:
			s.clearStackTo(tableRowContext...)
			s.push(false)
			s.pushMarker()
			s.mode = modeInCell
			return true
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			return !s.closeRow()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Tr:
			s.closeRow()
			return true
		case a.Table:
			return !s.closeRow()
		case a.Tbody, a.Tfoot, a.Thead:
			return !(s.inScope(tableScope, t.atom) && s.closeRow())
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html, a.Td, a.Th:
			return true
		}
	}
	return s.inTable()
}

func (s *streamer) inCell() bool {
	t := &s.tok
	switch t.typ {
	case html.StartTagToken:
		switch t.atom {
		case a.Caption, a.Col, a.Colgroup, a.Tbody, a.Td, a.Tfoot, a.Th, a.Thead, a.Tr:
			return !s.closeCell(a.Td, a.Th)
		case a.Select:
			return s.bail()
		}
	case html.EndTagToken:
		switch t.atom {
		case a.Td, a.Th:
			s.closeCell(t.atom)
			return true
		case a.Body, a.Caption, a.Col, a.Colgroup, a.Html:
			return true
		case a.Table, a.Tbody, a.Tfoot, a.Thead, a.Tr:
			if !s.inScope(tableScope, t.atom) {
				return true
			}
			s.popUntilClearing(tableScope, a.Td, a.Th)
			s.mode = modeInRow
			return false
		}
	}
	return s.inBody()
}

func (s *streamer) afterBody() bool { return s.afterTheBody(false) }

func (s *streamer) afterAfterBody() bool { return s.afterTheBody(true) }

// afterTheBody is the mode after body (afterAfter false) or after after body. The two
// differ in an end tag html (which moves after body on to after after body) and a
// doctype (which after after body processes in body); anything else that is not
// white space, <html> or a comment goes back to in body.
func (s *streamer) afterTheBody(afterAfter bool) bool {
	switch s.tok.typ {
	case html.ErrorToken:
		return true
	case html.TextToken:
		if len(trimLeftWS(s.tok.data)) == 0 {
			return s.inBody()
		}
	case html.StartTagToken:
		if s.tok.atom == a.Html {
			return s.inBody()
		}
	case html.EndTagToken:
		if !afterAfter && s.tok.atom == a.Html {
			s.mode = modeAfterAfterBody
			return true
		}
	case html.CommentToken:
		// After body it is attached to <html> (text on either side merges), after
		// after body to the document.
		return true
	case html.DoctypeToken:
		if afterAfter {
			return s.inBody()
		}
	}
	s.mode = modeInBody
	return false
}

// --- SVG foreign content ---

// inForeign is the parser's inForeignContent, for SVG only.
func (s *streamer) inForeign() bool {
	top := s.top()
	if top == nil || !top.svg {
		return false
	}
	if (top.atom == a.Desc || top.atom == a.Title) && (s.tok.typ == html.StartTagToken || s.tok.typ == html.TextToken) {
		if s.tok.typ == html.StartTagToken {
			s.fail = true // HTML inside an SVG integration point
		}
		return false
	}
	return s.tok.typ != html.ErrorToken
}

func (s *streamer) foreign() bool {
	t := &s.tok
	switch t.typ {
	case html.TextToken:
		d := t.data
		if bytes.IndexByte(d, 0) >= 0 {
			d = bytes.ReplaceAll(d, []byte{0}, []byte("\ufffd"))
		}
		s.addText(d)
	case html.CommentToken:
		s.addComment()
	case html.StartTagToken:
		if breaksOut(t) {
			for len(s.st) > 0 && s.top().svg && s.top().atom != a.Desc && s.top().atom != a.Title && !s.fail {
				s.pop()
			}
			return false
		}
		if svgUnsafe(t) {
			return s.bail()
		}
		s.push(true)
		s.z.NextIsNotRawText()
		if t.selfClosing {
			s.pop()
		}
	case html.EndTagToken:
		name := bstr(t.name)
		for i := len(s.st) - 1; i >= 0; i-- {
			if s.st[i].svg && sameName(&s.st[i], t.atom, name) {
				s.popTo(i)
				return true
			}
			if i > 0 && !s.st[i-1].svg {
				break
			}
		}
		return s.dispatch()
	}
	return true
}

// sameName reports whether the SVG element e has the tag name (atom, name), as the
// parser's case-insensitive comparison does.
func sameName(e *sentry, at a.Atom, name string) bool {
	if e.atom != 0 || at != 0 {
		return e.atom == at
	}
	return e.name == name
}

// breaksOut reports whether a start tag leaves foreign content.
func breaksOut(t *stok) bool {
	switch t.atom {
	case a.B, a.Big, a.Blockquote, a.Body, a.Br, a.Center, a.Code, a.Dd, a.Div, a.Dl, a.Dt,
		a.Em, a.Embed, a.H1, a.H2, a.H3, a.H4, a.H5, a.H6, a.Head, a.Hr, a.I, a.Img, a.Li,
		a.Listing, a.Menu, a.Meta, a.Nobr, a.Ol, a.P, a.Pre, a.Ruby, a.S, a.Small, a.Span,
		a.Strong, a.Strike, a.Sub, a.Sup, a.Table, a.Tt, a.U, a.Ul, a.Var:
		return true
	case a.Font:
		for _, at := range t.attr {
			switch at.Key {
			case "color", "face", "size":
				return true
			}
		}
	}
	return false
}

// svgUnsafe reports whether an SVG element of this name would take part in the tree
// builder's HTML rules (implied end tags, table contexts, templates, formatting
// elements' names) or is an integration point for HTML (foreignObject): the stream
// leaves such pages to the tree.
func svgUnsafe(t *stok) bool {
	switch t.atom {
	case a.Dd, a.Dt, a.Li, a.Optgroup, a.Option, a.P, a.Rb, a.Rp, a.Rt, a.Rtc,
		a.Html, a.Table, a.Template, a.Tr, a.Tbody, a.Tfoot, a.Thead, a.Td, a.Th,
		a.Caption, a.Colgroup, a.Col, a.Select, a.Frameset, a.Frame, a.Head, a.Body,
		a.Math, a.Form, a.Applet, a.Marquee, a.Object, a.Button,
		a.B, a.Big, a.Code, a.Em, a.Font, a.I, a.Nobr, a.S, a.Small, a.Strike, a.Strong, a.Tt, a.U:
		return true
	case 0:
		return bytes.Equal(t.name, []byte("foreignobject"))
	}
	return false
}

// svgNames interns the common SVG element names that are not atoms.
var svgNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range strings.Fields("path circle line rect g polygon polyline ellipse defs use symbol stop text tspan mask pattern filter lineargradient radialgradient clippath marker view switch animate animatetransform set") {
		m[n] = n
	}
	return m
}()

func internName(b []byte) string {
	if n, ok := svgNames[string(b)]; ok {
		return n
	}
	return string(b)
}
