package dashboards_test

// A reader of the parts of PromQL that the checks of the queries need:
// the vector selectors (metric name and label matchers) and the label
// lists of by, without, on and ignoring. It is not a parser: whether an
// expression is valid PromQL is promtool's to say (promtool_test.go and
// TestPromtoolParsesQueries run `promtool check rules` on every query). It
// fails on what it cannot read, and on unbalanced brackets.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// matcher is one label matcher of a selector.
type matcher struct {
	name, op, value string
}

// selector is one vector selector: a metric name, or names from a
// __name__ matcher, and its matchers.
type selector struct {
	names    []string
	matchers []matcher
}

func (s selector) String() string {
	var ms []string
	for _, m := range s.matchers {
		ms = append(ms, m.name+m.op+fmt.Sprintf("%q", m.value))
	}
	return strings.Join(s.names, "|") + "{" + strings.Join(ms, ", ") + "}"
}

// scanned is what scanPromQL reads from an expression.
type scanned struct {
	selectors []selector
	// groupings are the labels of by, without, on and ignoring lists.
	groupings []string
}

// keywords are PromQL words that are neither functions nor selectors.
var keywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}

// groupingKeywords are followed by a list of labels.
var groupingKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// token is one lexical token: kind is 'i' (identifier), 's' (string), 'n'
// (number or duration), or the punctuation or operator itself.
type token struct {
	kind string
	text string
}

// lexPromQL splits expr into tokens.
func lexPromQL(expr string) ([]token, error) {
	var out []token
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			out = append(out, token{"i", expr[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j], false) || expr[j] == '.' || expr[j] == '+' && (expr[j-1] == 'e' || expr[j-1] == 'E')) {
				j++
			}
			out = append(out, token{"n", expr[i:j]})
			i = j
		case c == '"' || c == '\'':
			j := i + 1
			var b strings.Builder
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && j+1 < len(expr) {
					j++
				}
				b.WriteByte(expr[j])
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{"s", b.String()})
			i = j + 1
		default:
			op := string(c)
			for _, two := range []string{"!=", "=~", "!~", "==", ">=", "<="} {
				if strings.HasPrefix(expr[i:], two) {
					op = two
				}
			}
			if !strings.Contains("(){}[],=!~<>+-*/%^", op[:1]) {
				return nil, fmt.Errorf("unexpected %q at %d", c, i)
			}
			out = append(out, token{op, op})
			i += len(op)
		}
	}
	return out, nil
}

// scanPromQL reads the selectors and grouping labels of expr.
func scanPromQL(expr string) (scanned, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return scanned{}, err
	}
	var out scanned
	var open []string // the closing brackets expected
	closing := map[string]string{"(": ")", "[": "]", "{": "}"}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func(k int) token {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return token{}
		}
		switch {
		case t.kind == "i" && slices.Contains(groupingKeywords, t.text) && next(1).kind == "(":
			j := i + 2
			for ; j < len(toks) && toks[j].kind != ")"; j++ {
				switch toks[j].kind {
				case "i":
					out.groupings = append(out.groupings, toks[j].text)
				case ",":
				default:
					return out, fmt.Errorf("%q in the label list of %s", toks[j].text, t.text)
				}
			}
			if j == len(toks) {
				return out, fmt.Errorf("unclosed label list of %s", t.text)
			}
			i = j
		case t.kind == "i" && slices.Contains(keywords, t.text):
		case t.kind == "i" && (next(1).kind == "(" || next(1).text == "by" || next(1).text == "without"):
			// A function or aggregation: its ( opens below.
		case t.kind == "i" || t.kind == "{":
			s := selector{}
			if t.kind == "i" {
				s.names = []string{t.text}
				i++
			}
			if i < len(toks) && toks[i].kind == "{" {
				j, ms, err := readMatchers(toks, i+1)
				if err != nil {
					return out, err
				}
				s.matchers, i = ms, j
			} else {
				i--
			}
			for _, m := range s.matchers {
				if m.name == "__name__" {
					s.names = strings.Split(m.value, "|")
				}
			}
			if len(s.names) == 0 {
				return out, fmt.Errorf("a selector without a metric name")
			}
			out.selectors = append(out.selectors, s)
		case t.kind == "[":
			// A range or a subquery: durations and colons up to ].
			j := i + 1
			for j < len(toks) && toks[j].kind != "]" {
				j++
			}
			if j == len(toks) {
				return out, fmt.Errorf("unclosed [")
			}
			i = j
		case t.kind == "(":
			open = append(open, closing[t.kind])
		case t.kind == ")" || t.kind == "]" || t.kind == "}":
			if len(open) == 0 || open[len(open)-1] != t.kind {
				return out, fmt.Errorf("unbalanced %s", t.kind)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return out, fmt.Errorf("unclosed brackets, %s expected", strings.Join(open, ""))
	}
	return out, nil
}

// readMatchers reads label matchers from toks[i:] up to the closing
// brace, and returns the index of that brace.
func readMatchers(toks []token, i int) (int, []matcher, error) {
	var ms []matcher
	for ; i < len(toks); i++ {
		switch toks[i].kind {
		case "}":
			return i, ms, nil
		case ",":
			continue
		case "i":
			if i+2 >= len(toks) || !slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].kind) || toks[i+2].kind != "s" {
				return i, nil, fmt.Errorf("label matcher of %s: want op and string", toks[i].text)
			}
			ms = append(ms, matcher{toks[i].text, toks[i+1].kind, toks[i+2].text})
			i += 2
		default:
			return i, nil, fmt.Errorf("%q in label matchers", toks[i].text)
		}
	}
	return i, nil, fmt.Errorf("unclosed label matchers")
}

// TestScanPromQL checks what scanPromQL reads from expressions of the
// shapes the dashboards and rules use, and that it refuses what it cannot
// read.
func TestScanPromQL(t *testing.T) {
	for _, tc := range []struct {
		expr      string
		selectors []string
		groupings []string
	}{
		{`up`, []string{`up{}`}, nil},
		{`sum by (job, instance) (rate(a_total{job=~"j", x!="y"}[5m])) > 0`, []string{`a_total{job=~"j", x!="y"}`}, []string{"job", "instance"}},
		{`histogram_quantile(0.99, sum without (a, b) (rate(h_bucket{outcome=~"x|y"}[1m]))) > 5`, []string{`h_bucket{outcome=~"x|y"}`}, []string{"a", "b"}},
		{`(m{a="1"} == 1) * on (t, s) group_left() n{b="2"}`, []string{`m{a="1"}`, `n{b="2"}`}, []string{"t", "s"}},
		{`{__name__=~"a|b", c="d"}`, []string{`a|b{__name__=~"a|b", c="d"}`}, nil},
		{`absent(up{job="x"})`, []string{`up{job="x"}`}, nil},
		{`60 * sum(x offset 5m) by (l)`, []string{`x{}`}, []string{"l"}},
		{`1 - avg_over_time(instance:m:max{q="\"quoted\""}[1h:5m])`, []string{`instance:m:max{q="\"quoted\""}`}, nil},
		{`a - b and c unless d or e`, []string{`a{}`, `b{}`, `c{}`, `d{}`, `e{}`}, nil},
	} {
		got, err := scanPromQL(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var sels []string
		for _, s := range got.selectors {
			sels = append(sels, s.String())
		}
		if !slices.Equal(sels, tc.selectors) || !slices.Equal(got.groupings, tc.groupings) {
			t.Errorf("%s: selectors %q groupings %q, want %q %q", tc.expr, sels, got.groupings, tc.selectors, tc.groupings)
		}
	}
	for _, bad := range []string{
		`sum(rate(x[1m])`, `x{a="b"`, `x{a=b}`, `sum by (a, 1) (x)`, `x)`, `{a="b"}`, `x{a="b}`, `x # y`,
	} {
		if _, err := scanPromQL(bad); err == nil {
			t.Errorf("scanPromQL read %q", bad)
		}
	}
}

// TestEveryQueryHasSelectors checks that the scanner finds a selector in
// every panel query, variable query and rule: the checks built on it
// cannot pass by reading nothing.
func TestEveryQueryHasSelectors(t *testing.T) {
	var exprs []string
	for _, q := range allPanelQueries(t) {
		exprs = append(exprs, q.expr)
	}
	for _, s := range variableQueries(t) {
		exprs = append(exprs, s)
	}
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	for _, e := range exprs {
		if sc, err := scanPromQL(substitute(e, "1m")); err != nil || len(sc.selectors) == 0 {
			t.Errorf("%q: %d selectors (%v)", e, len(sc.selectors), err)
		}
	}
}

// TestNoPrometheusModule checks that the module does not require
// github.com/prometheus/prometheus: the tests leave PromQL syntax to
// promtool, which checks it with the Prometheus that runs the rules,
// instead of compiling Prometheus's parser and everything it imports.
func TestNoPrometheusModule(t *testing.T) {
	for _, line := range strings.Split(string(readFile(t, "../go.mod")), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && (f[0] == "github.com/prometheus/prometheus" || f[0] == "require" && f[1] == "github.com/prometheus/prometheus") {
			t.Errorf("go.mod requires github.com/prometheus/prometheus: %q", line)
		}
	}
}

// checkPromQL reads expr and checks that every selector names a known
// series with labels it has, and that every grouping label exists on the
// series of the expression. It reports each problem through t. Whether
// expr is valid PromQL is promtool's to check (TestPromtoolParsesQueries).
func checkPromQL(t *testing.T, name, expr string) {
	t.Helper()
	for _, err := range promQLProblems(expr) {
		t.Errorf("%s: %v", name, err)
	}
}

// promQLProblems returns what checkPromQL reports about expr.
func promQLProblems(expr string) []error {
	sc, err := scanPromQL(expr)
	if err != nil {
		return []error{fmt.Errorf("%q does not read: %v", expr, err)}
	}
	var errs []error
	var metrics []string
	for _, vs := range sc.selectors {
		for _, name := range vs.names {
			known, ok := seriesLabels[name]
			if !ok {
				errs = append(errs, fmt.Errorf("unknown series %q in %q", name, expr))
				continue
			}
			metrics = append(metrics, name)
			for _, m := range vs.matchers {
				if m.name != "__name__" && !slices.Contains(known, m.name) && !slices.Contains(scrapeLabels, m.name) {
					errs = append(errs, fmt.Errorf("series %s has no label %q (in %q)", name, m.name, expr))
				}
			}
		}
	}
	for _, l := range sc.groupings {
		found := slices.Contains(scrapeLabels, l) || l == "le"
		for _, m := range metrics {
			found = found || slices.Contains(seriesLabels[m], l)
		}
		if !found {
			errs = append(errs, fmt.Errorf("grouping by %q, which none of %v has (in %q)", l, metrics, expr))
		}
	}
	return errs
}

// TestPanelPromQL parses every panel query, with the template variables
// as Grafana substitutes them.
func TestPanelPromQL(t *testing.T) {
	qs := allPanelQueries(t)
	if len(qs) < 20 {
		t.Fatalf("only %d panel queries found", len(qs))
	}
	for _, q := range qs {
		checkPromQL(t, q.name(), substitute(q.expr, "1m"))
	}
	for name, s := range variableQueries(t) {
		checkPromQL(t, name, substitute(s, "1m"))
	}
}

// TestRulePromQL parses every alert and recording rule expression, with
// and without a job selector.
func TestRulePromQL(t *testing.T) {
	for _, g := range ruleGroups() {
		for _, r := range g.Rules {
			checkPromQL(t, r.Alert+r.Record, r.Expr)
		}
	}
}

// TestPromQLCheckCatchesMistakes checks that checkPromQL fails on a typo
// in a series or label name and on a syntax error.
func TestPromQLCheckCatchesMistakes(t *testing.T) {
	for _, expr := range []string{
		`grpc_xds_client_conected == 0`,
		`grpc_xds_client_connected{grpc_xds_authority="a"}`,
		`sum by (grpc_xds_cache_state) (grpc_xds_client_connected)`,
		`sum(rate(grpc_xds_client_connected[1m])`,
		`{__name__=~"grpc_xds_client_connected|grpc_xds_client_conected"}`,
	} {
		if len(promQLProblems(expr)) == 0 {
			t.Errorf("checkPromQL accepted %q", expr)
		}
	}
}
