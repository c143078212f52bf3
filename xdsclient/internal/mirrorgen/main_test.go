package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

// The committed snapshot_gen.go is what the generator makes of the sources
// as they are.
func TestGenerated(t *testing.T) {
	dir := filepath.Join("..", "..")
	want, err := generateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, mirrorFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("xdsclient/%s is out of date: run go generate ./xdsclient/", mirrorFile)
	}
}

// The generator refuses definitions that differ, naming what differs.
func TestGenerateMirrorsRefuses(t *testing.T) {
	const cacheOK = `package cache
type State uint8
const (
	StateNone State = iota
	StateACKed
)
type Snapshot struct {
	Name  string
	State State
}`
	const clientOK = `package xdsclient
type CacheState uint8
const (
	StateNone CacheState = iota
	StateACKed
)
type EntrySnapshot struct {
	Name  string
	State CacheState
}`
	if _, err := generateMirrors(mustParse(t, cacheOK), mustParse(t, clientOK)); err != nil {
		t.Fatalf("the same definitions: %v", err)
	}
	for _, tc := range []struct {
		name, cache, client, want string
	}{
		{"a field the cache has", strings.Replace(cacheOK, "Name  string", "Name  string\n\tExtra int", 1), clientOK, "cache.Snapshot.Extra"},
		{"a field the client has", cacheOK, strings.Replace(clientOK, "Name  string", "Name  string\n\tExtra int", 1), "EntrySnapshot.Extra"},
		{"a field of another type", strings.Replace(cacheOK, "Name  string", "Name  []byte", 1), clientOK, "Name"},
		{"an embedded field", strings.Replace(cacheOK, "Name  string", "Name  string\n\ttime.Time", 1), clientOK, "embedded"},
		{"a state the client lacks", strings.Replace(cacheOK, "StateACKed", "StateACKed\n\tStateNACKed", 1), clientOK, "StateNACKed"},
		{"a state the cache lacks", cacheOK, strings.Replace(clientOK, "StateACKed", "StateACKed\n\tStateTimeout", 1), "StateTimeout"},
		{"no Snapshot", strings.Replace(cacheOK, "type Snapshot", "type Snap", 1), clientOK, "cache.Snapshot"},
		{"no states", strings.Replace(cacheOK, "StateNone State = iota", "StateNone = iota", 1), clientOK, "cache.State"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := generateMirrors(mustParse(t, tc.cache), mustParse(t, tc.client))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func mustParse(t *testing.T, src string) []*ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "src.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return []*ast.File{f}
}
