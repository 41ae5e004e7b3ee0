package variantweb

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// dateFormat writes an instant; relative formats write the age d instead.
type dateFormat struct {
	name     string
	relative bool
	format   func(t time.Time, d time.Duration) string
}

var (
	monthsDE   = []string{"Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober", "November", "Dezember"}
	monthsFR   = []string{"janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"}
	monthsES   = []string{"enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre", "octubre", "noviembre", "diciembre"}
	weekdaysDE = []string{"Sonntag", "Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag"}
	weekdaysFR = []string{"dimanche", "lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi"}
	weekdaysES = []string{"domingo", "lunes", "martes", "miércoles", "jueves", "viernes", "sábado"}
)

// days is the age in whole days, at least 1.
func days(d time.Duration) int { return max(1, int(d.Hours()/24)) }

var dateFormats = []dateFormat{
	{name: "iso", format: func(t time.Time, _ time.Duration) string { return t.Format("2006-01-02") }},
	{name: "iso-time", format: func(t time.Time, _ time.Duration) string { return t.Format(time.RFC3339) }},
	{name: "us", format: func(t time.Time, _ time.Duration) string { return t.Format("01/02/2006 3:04 PM") }},
	{name: "european", format: func(t time.Time, _ time.Duration) string { return t.Format("02.01.2006 15:04") }},
	{name: "english", format: func(t time.Time, _ time.Duration) string { return t.Format("January 2, 2006") }},
	{name: "english-weekday", format: func(t time.Time, _ time.Duration) string { return t.Format("Monday, 2 January 2006 15:04") }},
	{name: "rfc1123", format: func(t time.Time, _ time.Duration) string { return t.Format(time.RFC1123) }},
	{name: "german", format: func(t time.Time, _ time.Duration) string {
		return fmt.Sprintf("%s, %d. %s %d, %s Uhr", weekdaysDE[t.Weekday()], t.Day(), monthsDE[t.Month()-1], t.Year(), t.Format("15:04"))
	}},
	{name: "french", format: func(t time.Time, _ time.Duration) string {
		return fmt.Sprintf("%s %d %s %d à %d h %02d", weekdaysFR[t.Weekday()], t.Day(), monthsFR[t.Month()-1], t.Year(), t.Hour(), t.Minute())
	}},
	{name: "spanish", format: func(t time.Time, _ time.Duration) string {
		return fmt.Sprintf("%s, %d de %s de %d %s", weekdaysES[t.Weekday()], t.Day(), monthsES[t.Month()-1], t.Year(), t.Format("15:04"))
	}},
	{name: "japanese", format: func(t time.Time, _ time.Duration) string {
		return fmt.Sprintf("%d年%d月%d日 %d時%02d分", t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute())
	}},
	{name: "unix", format: func(t time.Time, _ time.Duration) string { return strconv.FormatInt(t.Unix(), 10) }},
	{name: "relative-en", relative: true, format: func(_ time.Time, d time.Duration) string {
		if d < 24*time.Hour {
			return fmt.Sprintf("%d hours ago", max(1, int(d.Hours())))
		}
		return fmt.Sprintf("%d days ago", days(d))
	}},
	{name: "relative-de", relative: true, format: func(_ time.Time, d time.Duration) string {
		return fmt.Sprintf("vor %d Tagen", days(d))
	}},
	{name: "relative-fr", relative: true, format: func(_ time.Time, d time.Duration) string {
		return fmt.Sprintf("il y a %d jours", days(d))
	}},
	{name: "relative-es", relative: true, format: func(_ time.Time, d time.Duration) string {
		return fmt.Sprintf("hace %d días", days(d))
	}},
	{name: "relative-ja", relative: true, format: func(_ time.Time, d time.Duration) string {
		return fmt.Sprintf("%d日前", days(d))
	}},
}

// DateWords are the words without digits that the dates family writes (lower case, as
// parse.Tokenize gives them): month and weekday names in English, German, French and
// Spanish, and the words of the relative and 12-hour formats. With the tokens that hold
// a digit they are every token the dates family adds or removes.
var DateWords = func() map[string]bool {
	m := make(map[string]bool)
	add := func(ws ...string) {
		for _, w := range ws {
			m[strings.ToLower(w)] = true
		}
	}
	for i := range 12 {
		add(time.Month(i+1).String(), time.Month(i + 1).String()[:3])
	}
	for i := range 7 {
		add(time.Weekday(i).String(), time.Weekday(i).String()[:3])
	}
	add(monthsDE...)
	add(monthsFR...)
	add(monthsES...)
	add(weekdaysDE...)
	add(weekdaysFR...)
	add(weekdaysES...)
	add("am", "pm", "utc", "gmt", "uhr", "à", "h", "de", "hours", "days", "ago", "vor", "tagen", "il", "y", "a", "jours", "hace", "días")
	return m
}()

var (
	isoDateRE  = regexp.MustCompile(`\b((?:19|20)\d\d)-([01]\d)-([0-3]\d)\b`)
	engDateRE  = regexp.MustCompile(`\b(January|February|March|April|May|June|July|August|September|October|November|December) ([1-9]|[12]\d|3[01]), ((?:19|20)\d\d)\b`)
	englishRef = "January 2, 2006"
)

// reformatDates rewrites the ISO and English dates of s with f.
func reformatDates(s string, f dateFormat) (string, int) {
	n := 0
	s = isoDateRE.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse("2006-01-02", m)
		if err != nil {
			return m
		}
		n++
		return f.format(t, 0)
	})
	s = engDateRE.ReplaceAllStringFunc(s, func(m string) string {
		t, err := time.Parse(englishRef, m)
		if err != nil {
			return m
		}
		n++
		return f.format(t, 0)
	})
	return s, n
}

// pickFormats draws 1 to 3 distinct date formats.
func pickFormats(r *rand.Rand) []dateFormat {
	perm := r.Perm(len(dateFormats))
	out := make([]dateFormat, 1+r.IntN(3))
	for i := range out {
		out[i] = dateFormats[perm[i]]
	}
	return out
}
