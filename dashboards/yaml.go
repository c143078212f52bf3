package dashboards

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// yamlMap is a YAML mapping whose keys keep the order they are given in.
// Values are strings, ints, bools, yamlMaps and lists of those ([]any,
// []yamlMap, []string).
type yamlMap []yamlField

// yamlField is one key of a yamlMap.
type yamlField struct {
	key   string
	value any
}

// renderYAML writes header (comment lines, each starting with "# ") and
// then m in block style: strings double-quoted, lists indented under
// their key.
func renderYAML(header string, m yamlMap) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimSuffix(header, "\n"), "\n") {
		if line == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + line + "\n")
	}
	writeMap(&b, 0, m)
	return b.Bytes()
}

// writeMap writes the fields of m, each on its own line at indent.
func writeMap(b *bytes.Buffer, indent int, m yamlMap) {
	for _, f := range m {
		b.WriteString(strings.Repeat(" ", indent))
		writeField(b, indent, f)
	}
}

// writeField writes key: value, the indentation of its first line written
// already; nested blocks go at indent+2.
func writeField(b *bytes.Buffer, indent int, f yamlField) {
	b.WriteString(f.key + ":")
	switch v := f.value.(type) {
	case yamlMap:
		if len(v) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteString("\n")
		writeMap(b, indent+2, v)
	case []any, []yamlMap, []string:
		items := listItems(v)
		if len(items) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		for _, item := range items {
			b.WriteString(strings.Repeat(" ", indent+2) + "- ")
			if m, ok := item.(yamlMap); ok && len(m) > 0 {
				// The first field on the dash's line, the others under it.
				writeField(b, indent+4, m[0])
				writeMap(b, indent+4, m[1:])
				continue
			}
			b.WriteString(yamlScalar(item) + "\n")
		}
	default:
		b.WriteString(" " + yamlScalar(v) + "\n")
	}
}

// listItems returns the items of a list value.
func listItems(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []yamlMap:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return nil
}

// yamlScalar renders a string, int or bool.
func yamlScalar(v any) string {
	switch s := v.(type) {
	case string:
		return yamlString(s)
	case int:
		return strconv.Itoa(s)
	case bool:
		return strconv.FormatBool(s)
	}
	panic("dashboards: no YAML form for a value of this type")
}

// yamlString quotes s as a YAML double-quoted scalar (the JSON string
// syntax, which YAML accepts as is).
func yamlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		// Encoding a string cannot fail.
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
