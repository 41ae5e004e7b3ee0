package configs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A complaint is the option's whose default makes it go away; one no option
// explains is left as written; the error wraps validate's.
func TestAttribute(t *testing.T) {
	c, where, err := LoadWhere(write(t, "crawl:\n  workers: 7\n\n  max_depth: 99\nmirror:\n  sample: 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Where{"crawl": "line 1", "crawl.workers": "line 2", "crawl.max_depth": "line 4", "mirror": "line 5", "mirror.sample": "line 6"}
	if fmt.Sprint(where) != fmt.Sprint(want) {
		t.Fatalf("where = %v, want %v", where, want)
	}
	sentinel := errors.New("always")
	validate := func(c Config) error {
		var errs []error
		if c.Crawl.Workers == 7 {
			errs = append(errs, errors.New("seven workers"))
		}
		if c.Crawl.Workers == 7 && c.Mirror.Sample == 3 {
			errs = append(errs, fmt.Errorf("workers %d with sample %d", c.Crawl.Workers, c.Mirror.Sample))
		}
		return errors.Join(append(errs, sentinel)...)
	}
	err = Attribute(c, where, validate)
	got := strings.Split(err.Error(), "\n")
	wantLines := []string{
		"line 2: crawl.workers: seven workers",
		"line 2, line 6: crawl.workers, mirror.sample: workers 7 with sample 3",
		"always",
	}
	if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("Attribute:\n%s\nwant:\n%s", err, strings.Join(wantLines, "\n"))
	}
	if !errors.Is(err, sentinel) {
		t.Error("the attributed error does not wrap validate's")
	}
	if Attribute(Default(), Where{}, func(Config) error { return nil }) != nil {
		t.Error("no complaint, yet an error")
	}
}
