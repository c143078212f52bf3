package layout_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/layout"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// root is the module root, from this package's directory.
const root = "../../.."

const module = "github.com/xdslens/xdslens"

// modulePackages returns the packages of this module.
func modulePackages(t *testing.T) map[string]*layout.Package {
	t.Helper()
	pkgs, err := layout.Packages(root, module)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have found the module: a few packages of each kind.
	for _, dir := range []string{"xdsclient", "internal/wire", "internal/testing/xdstest", "internal/xdswatch/demo"} {
		if pkgs[dir] == nil {
			t.Fatalf("no package %s among %d", dir, len(pkgs))
		}
	}
	return pkgs
}

// TestLayoutTableListsEveryPackage: the README's layout table names every
// package of the module once, and nothing that is not a folder.
func TestLayoutTableListsEveryPackage(t *testing.T) {
	pkgs := modulePackages(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := layout.TablePaths(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range layout.CheckTable(pkgs, listed, root) {
		t.Error(err)
	}
}

// TestImportsRunOneWay: no package that ships imports a test rig in its
// non-test files, and no library package imports a command's.
func TestImportsRunOneWay(t *testing.T) {
	for _, err := range layout.CheckImports(modulePackages(t), module) {
		t.Error(err)
	}
}

// writeTree writes files (path → content) under a new directory and
// returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// errorTexts returns the texts of errs.
func errorTexts(errs []error) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	return out
}

// TestCheckImports, on a module made for it: a library package and the
// command importing rigs, and the library importing the command, are
// reported; a rig importing anything, a command importing the library or
// its own demo, and a test file importing a rig are not.
func TestCheckImports(t *testing.T) {
	const m = "example.com/m"
	dir := writeTree(t, map[string]string{
		"lib/lib.go":                            "package lib\nimport _ \"example.com/m/internal/testing/rig\"\n",
		"lib/lib_test.go":                       "package lib\nimport _ \"example.com/m/internal/testing/other\"\n",
		"lib/uses/uses.go":                      "package uses\nimport _ \"example.com/m/lib/thingtest\"\nimport _ \"example.com/m/internal/xdswatch/demo\"\n",
		"lib/thingtest/thingtest.go":            "package thingtest\nimport _ \"example.com/m/lib\"\n",
		"internal/testing/rig/rig.go":           "package rig\nimport _ \"example.com/m/internal/xdswatch\"\n",
		"internal/xdswatch/watch.go":            "package xdswatch\nimport _ \"example.com/m/lib\"\nimport _ \"example.com/m/internal/xdswatch/demo\"\n",
		"internal/xdswatch/demo/demo.go":        "package demo\nimport _ \"example.com/m/internal/testing/rig\"\n",
		"examples/cmd/main.go":                  "package main\nimport _ \"example.com/m/internal/xdswatch\"\n",
		"other/go.mod":                          "module example.com/other\n",
		"other/o.go":                            "package o\nimport _ \"example.com/m/internal/testing/rig\"\n",
		"lib/testdata/t.go":                     "package t\nimport _ \"example.com/m/internal/testing/rig\"\n",
		"internal/testing/rig/rig_test.go":      "package rig\n",
		"internal/testing/other/other.go":       "package other\n",
		"internal/xdswatch/demo/demo_helper.go": "package demo\nimport \"fmt\"\nvar _ = fmt.Sprint\n",
	})
	pkgs, err := layout.Packages(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	wantDirs := []string{"examples/cmd", "internal/testing/other", "internal/testing/rig", "internal/xdswatch", "internal/xdswatch/demo", "lib", "lib/thingtest", "lib/uses"}
	if !slices.Equal(dirs, wantDirs) {
		t.Errorf("packages %q, want %q", dirs, wantDirs)
	}
	got := errorTexts(layout.CheckImports(pkgs, m))
	want := []string{
		"internal/xdswatch/demo imports the test rig internal/testing/rig: code that ships must not depend on a rig",
		"lib imports the test rig internal/testing/rig: code that ships must not depend on a rig",
		"lib/uses imports the test rig lib/thingtest: code that ships must not depend on a rig",
		"lib/uses imports internal/xdswatch/demo, which is the code of a command: the library must not depend on it",
	}
	if !slices.Equal(got, want) {
		t.Errorf("CheckImports:\n got %q\nwant %q", got, want)
	}
}

// TestCheckTable, on a module made for it: a package the table does not
// list, one it lists twice and a path that is no folder are reported; a
// row may list several folders, and folders without Go code.
func TestCheckTable(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a/a.go":           "package a\n",
		"a/b/b.go":         "package b\n",
		"c/c.go":           "package c\n",
		"d/d.go":           "package d\n",
		"scripts/run.sh":   "#!/bin/sh\n",
		"e/only_test.go":   "package e\n",
		"e/testdata/x.txt": "",
	})
	readme := strings.Join([]string{
		"# m",
		"## Layout",
		"",
		"| folder | what it holds |",
		"|---|---|",
		"| `a/`, `a/b/` | two packages |",
		"| `c/` | c |",
		"| `c/`, `scripts/` | c again; scripts |",
		"| `gone/` | nothing |",
		"",
		"Text with `d/` in it, which is no row.",
		"## Next",
		"| `d/` | another table |",
	}, "\n")
	listed, err := layout.TablePaths([]byte(readme))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "a/b", "c", "c", "scripts", "gone"}; !slices.Equal(listed, want) {
		t.Errorf("TablePaths = %q, want %q", listed, want)
	}
	pkgs, err := layout.Packages(dir, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	got := errorTexts(layout.CheckTable(pkgs, listed, dir))
	want := []string{
		"the layout table lists gone/, which is not a folder of the module",
		"the layout table lists c/ 2 times, want once",
		"the layout table does not list d/: add a row, or the folder to a row, with one line on its job",
		"the layout table does not list e/: add a row, or the folder to a row, with one line on its job",
	}
	if !slices.Equal(got, want) {
		t.Errorf("CheckTable:\n got %q\nwant %q", got, want)
	}
	if _, err := layout.TablePaths([]byte("# m\n## Other\n")); err == nil {
		t.Error("TablePaths of a file without a Layout section: no error")
	}
}
