package snippets_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/snippets"
)

// root is the module root, from this package's directory.
const root = "../../.."

// TestMarkdownQuotesCompiledCode checks every Markdown file of the
// module: each Go block is a quotation of compiled code, equal to it.
func TestMarkdownQuotesCompiledCode(t *testing.T) {
	errs, err := snippets.Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		t.Error(err)
	}
	// The check must have something to check.
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := snippets.Blocks("README.md", b)
	if err != nil || len(blocks) < 3 {
		t.Errorf("README.md: %d Go blocks, %v; want at least 3", len(blocks), err)
	}
}

// TestReadmeInstallation checks that the README says how to add the
// module and which Go it needs: the go line of go.mod.
func TestReadmeInstallation(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	install, _, _ := strings.Cut(string(readme), "## Quick start")
	for _, want := range []string{"go get github.com/xdslens/xdslens@latest", "Go " + string(m[1]) + " or later"} {
		if !strings.Contains(install, want) {
			t.Errorf("the README before its quick start does not say %q", want)
		}
	}
}

// TestCheckFindsDrift runs Check on a module of its own: a block equal to
// what it quotes passes; a changed block, a block without a marker and a
// marker naming nothing the file declares are each reported.
func TestCheckFindsDrift(t *testing.T) {
	const src = `package p

import "fmt"

// Greeter greets.
type Greeter struct{ name string }

// Greet prints a greeting.
func (g *Greeter) Greet() { fmt.Println("hello", g.name) }

func unrelated() {}

// hello greets the world.
func hello() {
	(&Greeter{"world"}).Greet()
}
`
	const quote = "// hello greets the world.\nfunc hello() {\n\t(&Greeter{\"world\"}).Greet()\n}\n\n" +
		"// Greeter greets.\ntype Greeter struct{ name string }\n\n" +
		"// Greet prints a greeting.\nfunc (g *Greeter) Greet() { fmt.Println(\"hello\", g.name) }"
	for _, tc := range []struct {
		name, md, wantErr string
	}{
		{"equal", "text\n<!-- snippet: p/p.go hello Greeter -->\n```go\n" + quote + "\n```\n", ""},
		{"changed", "<!-- snippet: p/p.go hello Greeter -->\n```go\n" + strings.Replace(quote, "world", "moon", 1) + "\n```\n", "README.md:2: the block differs from p/p.go hello Greeter"},
		{"no marker", "text\n\n```go\nfmt.Println(res)\n```\n", "README.md:3: a Go block without"},
		{"unknown name", "<!-- snippet: p/p.go goodbye -->\n```go\n```\n", "declares no goodbye"},
		{"unknown file", "<!-- snippet: p/q.go hello -->\n```go\n```\n", "q.go"},
		{"unclosed", "<!-- snippet: p/p.go hello -->\n```go\nfunc hello() {\n", "never closed"},
		{"in a list item", "- item:\n\n  <!-- snippet: p/p.go hello Greeter -->\n  ```go\n" + strings.ReplaceAll(quote, "\n", "\n  ") + "\n  ```\n", ""},
		{"whole file", "<!-- snippet: p/conf.yaml -->\n```yaml\na: 1\nb: 2\n```\n", ""},
		{"whole file changed", "<!-- snippet: p/conf.yaml -->\n```yaml\na: 1\n```\n", "README.md:2: the block differs from p/conf.yaml"},
		{"other language unquoted", "```yaml\nanything: 1\n```\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "p", "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{
				"p/p.go":              src,
				"p/conf.yaml":         "a: 1\nb: 2\n",
				"README.md":           tc.md,
				"p/testdata/skip.md":  "```go\nnot checked\n```\n",
				".hidden/x.md":        "```go\nnot checked\n```\n",
				"p/docs_no_blocks.md": "```sh\ngo test ./...\n```\n",
			}
			for name, content := range files {
				path := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			errs, err := snippets.Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("Check: %v, want no error", errs)
			case tc.wantErr != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr)):
				t.Errorf("Check: %v, want one error containing %q", errs, tc.wantErr)
			}
		})
	}
}

// TestEveryPackageIsVetted checks that every package of the module has test
// files: the README's test command, go test -vet=all, runs go vet's
// analyzers only on the packages it tests.
func TestEveryPackageIsVetted(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if not .TestGoFiles}}{{if not .XTestGoFiles}}{{.ImportPath}}{{end}}{{end}}", "github.com/xdslens/xdslens/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if untested := strings.TrimSpace(string(out)); untested != "" {
		t.Errorf("packages without tests, which go test -vet=all does not vet:\n%s", untested)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "go test -race -vet=all ./...") {
		t.Error("the README's test command no longer vets with go test -vet=all: this test checks the wrong thing")
	}
}

// readRoot returns the file at the slash-separated path name under the
// module root.
func readRoot(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// compareCommand runs the comparison with grpc-go's xDS client, a module of
// its own (compare/go.mod) that the test command's ./... does not reach.
const compareCommand = "(cd compare && go test -race -vet=all ./...)"

// TestCIRunsEveryCommand checks that the README gives the test command and
// the comparison's, and that CI runs both as the README gives them: the
// comparison lives outside ./..., so nothing else would notice it dropped.
func TestCIRunsEveryCommand(t *testing.T) {
	readme, ci := readRoot(t, "README.md"), readRoot(t, ".ci/run")
	for _, cmd := range []string{"go test -race -vet=all ./...", compareCommand} {
		if !strings.Contains(readme, "\n"+cmd+" ") {
			t.Errorf("the README does not give %q in a code block", cmd)
		}
		if !strings.Contains(ci, "\n"+cmd+"\n") {
			t.Errorf(".ci/run does not run %q on a line of its own", cmd)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "compare", "go.mod")); err != nil {
		t.Errorf("the comparison is no longer a module of its own: %v", err)
	}
}

// TestReadmeSaysWhatTheTestsNeed checks that the quick start says, after
// its test command, which Debian packages the whole run needs and that
// their tests skip without them, and that .ci/run installs those
// packages: a skipped package still prints "ok".
func TestReadmeSaysWhatTheTestsNeed(t *testing.T) {
	readme, ci := readRoot(t, "README.md"), readRoot(t, ".ci/run")
	_, quick, _ := strings.Cut(readme, "## Quick start")
	quick, _, _ = strings.Cut(quick, "\n## ")
	_, after, ok := strings.Cut(quick, "\ngo test -race -vet=all ./... ")
	if !ok {
		t.Fatal("the quick start does not give the test command")
	}
	for _, want := range []string{"`prometheus`", "`jsonnet`", "skip", "`.ci/run` installs"} {
		if !strings.Contains(after, want) {
			t.Errorf("the quick start does not say %s after its test command", want)
		}
	}
	if !regexp.MustCompile(`apt-get install[^\n]* prometheus jsonnet`).MatchString(ci) {
		t.Error(".ci/run does not install Debian's prometheus and jsonnet packages")
	}
}

// TestReadmeBuildsGrpcdebugFromATag checks that the steps to build
// grpcdebug check out v1.0.5, the version that builds from its source as
// fetched, and do not offer its main branch, which does not.
func TestReadmeBuildsGrpcdebugFromATag(t *testing.T) {
	for _, name := range []string{"README.md", "csds/README.md"} {
		_, steps, ok := strings.Cut(readRoot(t, name), "git clone https://github.com/grpc-ecosystem/grpcdebug\n")
		if !ok {
			t.Errorf("%s no longer says how to build grpcdebug", name)
			continue
		}
		steps, _, _ = strings.Cut(steps, "```")
		if !strings.Contains(steps, "\ngit checkout v1.0.5\n") {
			t.Errorf("%s: the grpcdebug build steps do not check out v1.0.5 on a line of its own:\n%s", name, steps)
		}
		if strings.Contains(steps, "main") {
			t.Errorf("%s: the grpcdebug build steps offer its main branch, which does not build as fetched:\n%s", name, steps)
		}
	}
}

// TestEveryTestBinaryEndsThroughTestmain checks that every test package's
// TestMain ends through package testmain, so that no test binary of the
// README's test command idles for the race detector's pause at exit.
func TestEveryTestBinaryEndsThroughTestmain(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}`, "github.com/xdslens/xdslens/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	ends := regexp.MustCompile(`testmain\.(Run\(m\)|Exit)`)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue // no tests (TestEveryPackageIsVetted reports it)
		}
		found := false
		for _, name := range fields[1:] {
			b, err := os.ReadFile(filepath.Join(fields[0], name))
			if err != nil {
				t.Fatal(err)
			}
			found = found || ends.Match(b)
		}
		if !found {
			t.Errorf("%s: no TestMain ending through testmain.Run(m) or testmain.Exit", fields[0])
		}
	}
}
