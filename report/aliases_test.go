package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAliasesReported: the canonical hints' counts in the JSON report
// (alias_hints, distrusted_hosts never null) and the text summary's line;
// neither when the crawl used none.
func TestAliasesReported(t *testing.T) {
	d := &Data{Aliases: &Aliases{RequestsSaved: 7, Withdrawn: 2, ClaimsChecked: 3, ClaimsWrong: 1}}
	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var m struct {
		A map[string]any `json:"alias_hints"`
	}
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.A["requests_saved"] != 7.0 || m.A["withdrawn"] != 2.0 || m.A["claims_checked"] != 3.0 || m.A["claims_wrong"] != 1.0 {
		t.Errorf("alias_hints %v", m.A)
	}
	if l, ok := m.A["distrusted_hosts"].([]any); !ok || len(l) != 0 {
		t.Errorf("distrusted_hosts %v, want []", m.A["distrusted_hosts"])
	}
	var text strings.Builder
	if err := WriteText(&text, d); err != nil {
		t.Fatal(err)
	}
	if want := "7 requests saved by canonical hints; 2 withdrawn, 1 of 3 claims wrong, 0 hosts distrusted"; !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}

	js.Reset()
	text.Reset()
	if err := WriteJSON(&js, &Data{}); err != nil || strings.Contains(js.String(), "alias_hints") {
		t.Errorf("no hints used, JSON has alias_hints (%v)", err)
	}
	if err := WriteText(&text, &Data{}); err != nil || strings.Contains(text.String(), "canonical hints") {
		t.Errorf("no hints used, text has the line (%v)", err)
	}
}
