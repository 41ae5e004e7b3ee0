package configs

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
)

// Where says where each option of a Config that was set came from, by key
// ("politeness.delay"): "line 12" for a line of the config file, "--delay"
// for a flag. Options left at their defaults are absent.
type Where map[string]string

// LoadWhere is Load, and also where in the file each option it sets is
// written (an option's line in Where).
func LoadWhere(path string) (Config, Where, error) {
	c := Default()
	where := Where{}
	if path == "" {
		return c, where, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, where, fmt.Errorf("cannot read config: %w", err)
	}
	if err := decodeWhere(b, &c, where); err != nil {
		return c, where, fmt.Errorf("config %s: %w", path, err)
	}
	return c, where, nil
}

// Keys returns the key of every option of a Config ("crawl.workers",
// "politeness.delay", ...), in the order of the Config's fields.
func Keys() []string {
	var keys []string
	walkOptions(reflect.ValueOf(&Config{}).Elem(), "", func(key string, _ reflect.Value) { keys = append(keys, key) })
	return keys
}

// walkOptions calls fn with each option of the section v (key and value):
// the leaves of the sections, as decodeNode decodes them.
func walkOptions(v reflect.Value, key string, fn func(key string, v reflect.Value)) {
	if v.Kind() != reflect.Struct || reflect.PointerTo(v.Type()).Implements(unmarshalerType) {
		fn(key, v)
		return
	}
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if key != "" {
			name = key + "." + name
		}
		walkOptions(v.Field(i), name, fn)
	}
}

// Attribute names, for each complaint that validate makes about c, the
// options behind it and where they were set: a complaint is an option's
// when it goes away, or changes, with that option alone back at its
// default. So each stage keeps its own rules and its own words (one copy of
// each rule), and the user still reads the key and the line to change:
//
//	line 4: politeness.delay: frontier: delay must be >= 0, got -1s
//
// A complaint that no single option explains is left as validate wrote it.
// The result wraps validate's error (errors.Is and As see through it); it is
// nil when validate finds nothing.
func Attribute(c Config, where Where, validate func(Config) error) error {
	err := validate(c)
	if err == nil {
		return nil
	}
	complaints := strings.Split(err.Error(), "\n")
	keys := make([][]string, len(complaints))
	def := Default()
	cv, dv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(&def).Elem()
	for _, key := range Keys() {
		f, d := optionValue(cv, key), optionValue(dv, key)
		if reflect.DeepEqual(f.Interface(), d.Interface()) {
			continue // at its default: not what the user changed
		}
		was := reflect.New(f.Type()).Elem()
		was.Set(f)
		f.Set(d)
		var still []string
		if err := validate(c); err != nil {
			still = strings.Split(err.Error(), "\n")
		}
		f.Set(was)
		for i, m := range complaints {
			if !slices.Contains(still, m) {
				keys[i] = append(keys[i], key)
			}
		}
	}
	lines := make([]string, len(complaints))
	for i, m := range complaints {
		lines[i] = where.prefix(keys[i]) + m
	}
	return &attributed{msg: strings.Join(lines, "\n"), err: err}
}

// prefix is "line 4: politeness.delay: " for the options keys (their
// sources, then their keys), "" for none.
func (w Where) prefix(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	var from []string
	for _, k := range keys {
		if s, ok := w[k]; ok && !slices.Contains(from, s) {
			from = append(from, s)
		}
	}
	p := strings.Join(keys, ", ") + ": "
	if len(from) > 0 {
		p = strings.Join(from, ", ") + ": " + p
	}
	return p
}

// optionValue is the field of the option key in the Config v.
func optionValue(v reflect.Value, key string) reflect.Value {
	for _, name := range strings.Split(key, ".") {
		for i := 0; i < v.NumField(); i++ {
			if n, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ","); n == name {
				v = v.Field(i)
				break
			}
		}
	}
	return v
}

// attributed is a validation error with its complaints attributed to keys.
type attributed struct {
	msg string
	err error
}

func (a *attributed) Error() string { return a.msg }
func (a *attributed) Unwrap() error { return a.err }
