// Package layout checks that the module's folders say what its code is:
// the README's layout table lists every package once, and the imports run
// one way between the three kinds of code.
//
// The kinds, told by path:
//
//	| path                              | kind                | ships in                                  |
//	|-----------------------------------|---------------------|-------------------------------------------|
//	| internal/testing/..., *test       | a test rig          | nothing: tests and the tools of the repo  |
//	| internal/xdswatch/..., examples/  | the command         | the xdswatch command (its demo included)  |
//	| anything else                     | the library         | every program that imports xdslens        |
//
// A package whose last path element ends in "test" (transporttest) is a
// rig wherever it is. [CheckImports] reports a package that is not a rig
// and imports one in its non-test files, and a library package that
// imports the command; [CheckTable] reports a package that the README's
// "## Layout" table does not list, or lists twice, and a path it lists
// that is not a folder of the module.
package layout

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Package is one package of the module.
type Package struct {
	// Dir is its folder, relative to the module root, with slashes ("."
	// for the root).
	Dir string
	// Imports are the import paths of its non-test files.
	Imports []string
}

// Packages returns the packages of the module whose root is root and whose
// path is module, by folder: every folder holding a .go file, but for
// testdata folders, folders whose name starts with "." or "_", and other
// modules (a folder with a go.mod of its own).
func Packages(root, module string) (map[string]*Package, error) {
	pkgs := make(map[string]*Package)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		dir := path.Dir(rel)
		pkg := pkgs[dir]
		if pkg == nil {
			pkg = &Package{Dir: dir}
			pkgs[dir] = pkg
		}
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %v", rel, imp.Path.Value, err)
			}
			if ip == module || strings.HasPrefix(ip, module+"/") {
				if !slices.Contains(pkg.Imports, ip) {
					pkg.Imports = append(pkg.Imports, ip)
				}
			}
		}
		return nil
	})
	return pkgs, err
}

// IsRig reports whether the package in folder dir is a test rig: under
// internal/testing/, or named "...test".
func IsRig(dir string) bool {
	return dir == "internal/testing" || strings.HasPrefix(dir, "internal/testing/") || strings.HasSuffix(path.Base(dir), "test")
}

// IsCommand reports whether the package in folder dir belongs to a
// command: the xdswatch command's code and demo, or a program under
// examples/.
func IsCommand(dir string) bool {
	for _, top := range []string{"internal/xdswatch", "examples"} {
		if dir == top || strings.HasPrefix(dir, top+"/") {
			return true
		}
	}
	return false
}

// CheckImports returns an error for each import, in the non-test files of
// pkgs (of the module whose path is module), that runs the wrong way: from
// a package that is not a rig to a rig, and from a library package to a
// command's.
func CheckImports(pkgs map[string]*Package, module string) []error {
	var errs []error
	for _, dir := range sortedDirs(pkgs) {
		if IsRig(dir) {
			continue
		}
		for _, ip := range pkgs[dir].Imports {
			to := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
			if to == "" {
				to = "."
			}
			switch {
			case IsRig(to):
				errs = append(errs, fmt.Errorf("%s imports the test rig %s: code that ships must not depend on a rig", dir, to))
			case IsCommand(to) && !IsCommand(dir):
				errs = append(errs, fmt.Errorf("%s imports %s, which is the code of a command: the library must not depend on it", dir, to))
			}
		}
	}
	return errs
}

// layoutTable matches a row of the layout table; its first cell is group 1.
var layoutTable = regexp.MustCompile("^\\|([^|]*)\\|")

// backquoted matches one backquoted path in a cell.
var backquoted = regexp.MustCompile("`([^`]+)`")

// TablePaths returns the folders that the table of the "## Layout" section
// of a Markdown file lists in its first column, in order, without their
// trailing slash: every backquoted path of the first cell of each row.
func TablePaths(markdown []byte) ([]string, error) {
	var out []string
	in, seen := false, false
	sc := bufio.NewScanner(bytes.NewReader(markdown))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layout"
			seen = seen || in
			continue
		}
		if !in {
			continue
		}
		m := layoutTable.FindStringSubmatch(line)
		if m == nil || strings.Trim(m[1], " -") == "" || strings.TrimSpace(m[1]) == "folder" {
			continue
		}
		for _, q := range backquoted.FindAllStringSubmatch(m[1], -1) {
			out = append(out, strings.TrimSuffix(q[1], "/"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !seen {
		return nil, fmt.Errorf(`no "## Layout" section`)
	}
	return out, nil
}

// CheckTable returns an error for each package of pkgs that listed, the
// paths of the layout table, does not name exactly once, and for each
// listed path that is not a folder below root.
func CheckTable(pkgs map[string]*Package, listed []string, root string) []error {
	var errs []error
	count := make(map[string]int)
	for _, p := range listed {
		count[p]++
		if fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("the layout table lists %s/, which is not a folder of the module", p))
		}
	}
	for _, dir := range sortedDirs(pkgs) {
		switch n := count[dir]; {
		case n == 0:
			errs = append(errs, fmt.Errorf("the layout table does not list %s/: add a row, or the folder to a row, with one line on its job", dir))
		case n > 1:
			errs = append(errs, fmt.Errorf("the layout table lists %s/ %d times, want once", dir, n))
		}
	}
	return errs
}

// sortedDirs returns the folders of pkgs in order.
func sortedDirs(pkgs map[string]*Package) []string {
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	return dirs
}
