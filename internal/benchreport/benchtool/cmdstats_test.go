package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_hset:calls=30,usec=60,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=10,usec=500,usec_per_call=50.00,rejected_calls=1,failed_calls=0\r\n" +
		"cmdstat_rpush:calls=20,usec=40,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n"
	stats, err := parseCommandStats(info)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 3 || stats[0] != (cmdStat{"hset", 30, 60}) || stats[1] != (cmdStat{"evalsha", 10, 500}) {
		t.Fatalf("parsed %+v", stats)
	}
	cmds, scripts := commandsPerPage(stats, 10)
	if cmds != 5 || scripts != 1 {
		t.Errorf("per page: %v commands, %v script calls; want 5, 1", cmds, scripts)
	}
	var b bytes.Buffer
	writeCommandStats(&b, "run", stats, 10)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "evalsha") || !strings.Contains(lines[1], "50.00") {
		t.Errorf("printed, most time first:\n%s", b.String())
	}
	if _, err := parseCommandStats("cmdstat_get:calls=x,usec=1"); err == nil {
		t.Error("a bad number: no error")
	}
}
