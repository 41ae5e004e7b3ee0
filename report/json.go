package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrNilData is returned, wrapped, by the writers when given a nil *Data.
var ErrNilData = errors.New("nil report data")

// normalized returns a copy of d ready to be rendered: slices that the schema
// says are never null are non-nil, by_class holds the seven classes, counters
// left at zero by the engine are derived from the pages, and pages, mirrors
// and curve points are in a stable order. d itself is not modified.
func normalized(d *Data) *Data {
	n := *d
	n.Stats.ByClass = byClass(d)
	if n.Stats.Pages == 0 {
		n.Stats.Pages = len(d.Pages)
	}
	if n.Stats.Hosts == 0 {
		n.Stats.Hosts = len(Hosts(d))
	}
	n.Pages = slices.Clone(d.Pages)
	if n.Pages == nil {
		n.Pages = []Page{}
	}
	slices.SortStableFunc(n.Pages, func(a, b Page) int { return strings.Compare(a.URL, b.URL) })
	n.Mirrors = sortedMirrors(d.Mirrors)
	n.ReplicatedPrefixes = sortedMirrors(d.ReplicatedPrefixes)
	n.HostNotes = slices.Clone(d.HostNotes)
	if n.HostNotes == nil {
		n.HostNotes = []HostNote{}
	}
	slices.SortStableFunc(n.HostNotes, func(a, b HostNote) int {
		return cmp.Or(strings.Compare(a.Host, b.Host), strings.Compare(a.Kind, b.Kind))
	})
	n.IrrelevantParams = slices.Clone(d.IrrelevantParams)
	if n.IrrelevantParams == nil {
		n.IrrelevantParams = []IrrelevantParam{}
	}
	for i := range n.IrrelevantParams {
		if n.IrrelevantParams[i].Examples == nil {
			n.IrrelevantParams[i].Examples = []ParamPair{}
		}
	}
	slices.SortStableFunc(n.IrrelevantParams, func(a, b IrrelevantParam) int {
		return cmp.Or(naturalCompare(a.Host, b.Host), strings.Compare(a.Param, b.Param))
	})
	n.MissingSubtrees = slices.Clone(d.MissingSubtrees)
	if n.MissingSubtrees == nil {
		n.MissingSubtrees = []MissingSubtree{}
	}
	for i := range n.MissingSubtrees {
		if n.MissingSubtrees[i].Examples == nil {
			n.MissingSubtrees[i].Examples = []string{}
		}
	}
	slices.SortStableFunc(n.MissingSubtrees, func(a, b MissingSubtree) int { return naturalCompare(a.Prefix, b.Prefix) })
	n.Curve = slices.Clone(d.Curve)
	if n.Curve == nil {
		n.Curve = []CurvePoint{}
	}
	slices.SortStableFunc(n.Curve, func(a, b CurvePoint) int { return cmp.Compare(a.Jaccard, b.Jaccard) })
	if d.Aliases != nil && d.Aliases.Distrusted == nil {
		a := *d.Aliases
		a.Distrusted = []HostNote{}
		n.Aliases = &a
	}
	n.EndToEnd = slices.Clone(d.EndToEnd)
	slices.SortStableFunc(n.EndToEnd, func(a, b CurvePoint) int { return cmp.Compare(a.Jaccard, b.Jaccard) })
	return &n
}

func sortedMirrors(ms []Mirror) []Mirror {
	out := slices.Clone(ms)
	if out == nil {
		return []Mirror{}
	}
	slices.SortStableFunc(out, func(a, b Mirror) int {
		return cmp.Or(
			naturalCompare(a.Host, b.Host),
			strings.Compare(a.Prefix, b.Prefix),
			naturalCompare(a.MirrorOf, b.MirrorOf),
			strings.Compare(a.OriginalPrefix, b.OriginalPrefix),
		)
	})
	return out
}

// WriteJSON writes d as one indented JSON document whose schema is described
// in SCHEMA.md. The output is deterministic: pages are sorted by URL, mirrors
// and replicated prefixes by host and prefix, curve points by Jaccard, and
// map keys by name. mirrors, replicated_prefixes, pages and filter_curve are
// [] rather than null when empty, and by_class always holds the seven classes.
func WriteJSON(w io.Writer, d *Data) error {
	if d == nil {
		return fmt.Errorf("report: write json: %w", ErrNilData)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalized(d)); err != nil {
		return fmt.Errorf("report: write json: %w", err)
	}
	return nil
}
