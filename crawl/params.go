package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/horseshoe-crawler/horseshoe/dedup"
	"github.com/horseshoe-crawler/horseshoe/frontier"
	"github.com/horseshoe-crawler/horseshoe/report"
	"github.com/horseshoe-crawler/horseshoe/storage"
)

// Learned irrelevant parameters (issue 16). frontier.ParamLearner decides; the engine
// feeds it every committed page with text, stores what it decides as evidence of kind
// paramEvidence, and rewrites links, redirect targets and seeds with its rules.

// paramEvidence is the storage kind of frontier.ParamRule records.
const paramEvidence = "param"

// learnParams shows the learner a page about to be committed: a unique page is its own
// cluster, an exact duplicate its original's. Near duplicates, pages without words and
// pages without content teach nothing. It runs before the commit's transaction, which
// may be retried, and returns the rules that transaction must store.
func (e *Engine) learnParams(p *storage.Page, c *pageContent, d dedup.Decision) []frontier.ParamRule {
	if c == nil || (c.known == nil && (c.sig == nil || c.sig.Words == 0)) {
		return nil
	}
	cluster := p.ID
	switch d.Class {
	case dedup.Exact:
		cluster = d.Original
	case dedup.Unique:
	default:
		return nil
	}
	rules := e.params.Observe(p.URL, cluster, c.links)
	for _, r := range rules {
		if r.Active() {
			e.logger.Info("parameter irrelevant", "host", r.Host, "param", r.Param, "value", r.Value, "pairs", r.Pairs, "paths", r.Paths)
		} else {
			e.logger.Info("parameter relevant", "host", r.Host, "param", r.Param, "withdrawn", r.Withdrawn)
		}
	}
	return rules
}

// putParamRules stores the rules learnParams returned.
func putParamRules(tx EvidenceLog, rules []frontier.ParamRule) error {
	for _, r := range rules {
		if err := tx.PutEvidence(paramEvidence, r.Key(), r); err != nil {
			return err
		}
	}
	return nil
}

// restoreParams loads the stored rules into the learner.
func (e *Engine) restoreParams() error {
	rules, err := restoreEvidence[frontier.ParamRule](e, paramEvidence)
	if err != nil {
		return fmt.Errorf("parameter evidence: %w", err)
	}
	e.params.Restore(rules)
	return nil
}

// refreshParams reads the stored rules every Options.ParamRefresh until ctx
// ends, and takes those other workers of a shared crawl decided (or
// withdrew): a rule learned by one worker rewrites every worker's links
// within about that interval. A read that fails is tried at the next tick.
func (e *Engine) refreshParams(ctx context.Context) {
	t := time.NewTicker(e.o.ParamRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rules, err := restoreEvidence[frontier.ParamRule](e, paramEvidence)
		if err != nil {
			e.logger.Warn("cannot read the parameter rules of the other workers", "err", err)
			continue
		}
		if n := e.params.Merge(rules); n > 0 {
			e.logger.Info("parameter rules of other workers taken", "rules", n)
		}
	}
}

// paramCanonical rewrites canonical URLs with the learned rules, dropping the repeats
// that rewriting makes. It returns links itself when nothing changes.
func (e *Engine) paramCanonical(links []string) []string {
	var out []string
	for i, l := range links {
		cu := e.params.Canonical(l)
		if cu != l && out == nil {
			out = append(make([]string, 0, len(links)), links[:i]...)
		}
		if out != nil {
			out = append(out, cu)
		}
	}
	if out == nil {
		return links
	}
	seen := make(map[string]bool, len(out))
	j := 0
	for _, l := range out {
		if !seen[l] {
			seen[l] = true
			out[j] = l
			j++
		}
	}
	return out[:j]
}

// paramReport returns the decided rules (standing or withdrawn) for the report;
// rules blocked before any decision are not news.
func paramReport(db *storage.DB) ([]report.IrrelevantParam, error) {
	out := []report.IrrelevantParam{}
	err := db.ForEachEvidence(paramEvidence, func(_ string, v []byte) error {
		var r frontier.ParamRule
		if err := json.Unmarshal(v, &r); err != nil {
			return err
		}
		if !r.Decided {
			return nil
		}
		row := report.IrrelevantParam{Host: r.Host, Param: r.Param, Value: r.Value, Pairs: r.Pairs, Paths: r.Paths,
			Withdrawn: r.Withdrawn, Examples: make([]report.ParamPair, 0, len(r.Examples))}
		for _, e := range r.Examples {
			row.Examples = append(row.Examples, report.ParamPair(e))
		}
		if r.Withdrawn && r.Counter != nil {
			c := report.ParamPair(*r.Counter)
			row.Counter = &c
		}
		out = append(out, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("parameter evidence: %w", err)
	}
	return out, nil
}
