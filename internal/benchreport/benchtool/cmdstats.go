package main

import (
	"cmp"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdStat is one line of Redis's INFO commandstats: calls and the
// microseconds spent in them (a script's EVALSHA counts its inner commands'
// time too; the inner commands have lines of their own).
type cmdStat struct {
	name        string
	calls, usec int64
}

// scriptCalls are the commands that run scripts: their time includes their
// inner commands', which are counted on their own lines.
var scriptCalls = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "fcall": true, "fcall_ro": true}

// parseCommandStats reads INFO commandstats ("cmdstat_hset:calls=3,usec=12,
// usec_per_call=4.00,...").
func parseCommandStats(info string) ([]cmdStat, error) {
	var out []cmdStat
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		s := cmdStat{name: strings.TrimPrefix(name, "cmdstat_")}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			var err error
			switch k {
			case "calls":
				s.calls, err = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("commandstats %q: %w", line, err)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// commandsPerPage sums stats over pages: every command's calls (a script's
// inner commands included, the script calls not: those are the round trips'
// entries), and the calls of scripts.
func commandsPerPage(stats []cmdStat, pages int) (commands, scripts float64) {
	if pages == 0 {
		return 0, 0
	}
	var c, s int64
	for _, st := range stats {
		if scriptCalls[st.name] {
			s += st.calls
		} else {
			c += st.calls
		}
	}
	return float64(c) / float64(pages), float64(s) / float64(pages)
}

// writeCommandStats prints stats per page: calls and microseconds a page of
// each command, most time first.
func writeCommandStats(w io.Writer, name string, stats []cmdStat, pages int) {
	if pages == 0 {
		return
	}
	stats = slices.Clone(stats)
	slices.SortFunc(stats, func(a, b cmdStat) int { return cmp.Compare(b.usec, a.usec) })
	cmds, scripts := commandsPerPage(stats, pages)
	fmt.Fprintf(w, "   %s: redis commands a page %.1f (script calls %.1f, their inner commands included in the first)\n", name, cmds, scripts)
	p := float64(pages)
	for _, s := range stats {
		fmt.Fprintf(w, "     %-14s calls/page %7.2f  usec/page %7.2f\n", s.name, float64(s.calls)/p, float64(s.usec)/p)
	}
}

// perK is d in seconds per 1,000 pages.
func perK(d time.Duration, pages int) float64 {
	if pages == 0 {
		return 0
	}
	return d.Seconds() * 1000 / float64(pages)
}

// slowStats sums SLOWLOG entries by command, a script call by the script's
// name (names: SHA1 -> name; an EVAL's body is hashed), an unknown script as
// its SHA1's first 8 digits. Entries without a client address (the commands
// of a script, where Redis logs them) are named "(script) command".
func slowStats(entries []redis.SlowLog, names map[string]string) []cmdStat {
	byName := map[string]*cmdStat{}
	var order []string
	for _, e := range entries {
		if len(e.Args) == 0 {
			continue
		}
		name := strings.ToLower(e.Args[0])
		if len(e.Args) > 1 {
			switch name {
			case "evalsha", "evalsha_ro":
				name = scriptName(names, strings.ToLower(e.Args[1]))
			case "eval", "eval_ro":
				sum := sha1.Sum([]byte(e.Args[1]))
				name = scriptName(names, hex.EncodeToString(sum[:]))
			}
		}
		if e.ClientAddr == "" {
			name = "(script) " + name
		}
		s := byName[name]
		if s == nil {
			s = &cmdStat{name: name}
			byName[name] = s
			order = append(order, name)
		}
		s.calls++
		s.usec += e.Duration.Microseconds()
	}
	out := make([]cmdStat, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}

func scriptName(names map[string]string, sha string) string {
	if n, ok := names[sha]; ok {
		return "script " + n
	}
	return "script " + sha[:min(8, len(sha))]
}
