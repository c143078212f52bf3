package snippets

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// markerRE matches the line that announces a quoted block.
var markerRE = regexp.MustCompile(`^<!-- snippet: (\S+)((?: [A-Za-z_][A-Za-z0-9_]*)*) -->$`)

// fenceRE matches the opening fence of a block and captures its language.
var fenceRE = regexp.MustCompile("^```([A-Za-z0-9_+-]*)$")

// Block is one fenced block of a Markdown file.
type Block struct {
	// File is the Markdown file, Line the line of its opening fence (from
	// 1).
	File string
	Line int
	// Lang is the language the fence names ("go", "yaml"), "" for none.
	Lang string
	// Source and Names are what its marker quotes, "" and nil when the
	// block has no marker.
	Source string
	Names  []string
	// Text is the block's content, without the fences.
	Text string
}

// Blocks returns the fenced blocks of the Markdown file md, whose content
// is b.
func Blocks(md string, b []byte) ([]Block, error) {
	var (
		blocks []Block
		cur    *Block
		prev   string
		text   []string
		indent string // of the opening fence, which a list item indents
	)
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && fenceRE.MatchString(strings.TrimSpace(line)):
			cur = &Block{File: md, Line: n, Lang: fenceRE.FindStringSubmatch(strings.TrimSpace(line))[1]}
			indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.Source, cur.Names = m[1], strings.Fields(m[2])
			}
			text = nil
		case cur != nil && strings.TrimSpace(line) == "```":
			cur.Text = strings.Join(text, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			text = append(text, strings.TrimPrefix(line, indent))
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", md, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: block never closed", md, cur.Line)
	}
	return blocks, nil
}

// Quote returns what a block that quotes names of the file path must
// hold: the source of those top-level declarations of a Go file, or the
// whole of any file when names is empty (without its final newline).
func Quote(path string, names []string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return strings.TrimSuffix(string(src), "\n"), nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return "", err
	}
	text := func(n ast.Node, doc *ast.CommentGroup) string {
		start := n.Pos()
		if doc != nil {
			start = doc.Pos()
		}
		return string(src[fset.Position(start).Offset:fset.Position(n.End()).Offset])
	}
	var parts []string
	for _, name := range names {
		var found []string
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.Name == name {
					found = append(found, text(d, d.Doc))
				}
			case *ast.GenDecl:
				if declares(d, name) {
					found = append(found, text(d, d.Doc))
				}
			}
		}
		if len(found) == 0 {
			return "", fmt.Errorf("%s declares no %s", path, name)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && receiverType(fd) == name {
				found = append(found, text(fd, fd.Doc))
			}
		}
		parts = append(parts, found...)
	}
	return strings.Join(parts, "\n\n"), nil
}

// declares reports whether d declares name (a type, a var or a const).
func declares(d *ast.GenDecl, name string) bool {
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.Name == name {
				return true
			}
		case *ast.ValueSpec:
			for _, n := range s.Names {
				if n.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// receiverType returns the name of the type of fd's receiver.
func receiverType(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// Check reads every Markdown file under root, the module root, and returns
// an error for each fenced Go block that has no marker, and for each
// block (Go or not) that differs from what its marker quotes. Directories named testdata and those
// starting with a dot are skipped.
func Check(root string) ([]error, error) {
	var errs []error
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".md" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		blocks, err := Blocks(rel, b)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		for _, bl := range blocks {
			if err := checkBlock(root, bl); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	return errs, err
}

// checkBlock compares one block with what its marker quotes.
func checkBlock(root string, b Block) error {
	if b.Source == "" && b.Lang != "go" {
		return nil
	}
	if b.Source == "" {
		return fmt.Errorf("%s:%d: a Go block without a %q line before it: quote compiled code instead", b.File, b.Line, "<!-- snippet: PATH NAME... -->")
	}
	want, err := Quote(filepath.Join(root, filepath.FromSlash(b.Source)), b.Names)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", b.File, b.Line, err)
	}
	if b.Text != want {
		return fmt.Errorf("%s:%d: the block differs from %s, which reads:\n%s", b.File, b.Line, strings.Join(append([]string{b.Source}, b.Names...), " "), want)
	}
	return nil
}
