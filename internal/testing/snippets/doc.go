// Package snippets keeps the Go code shown in the project's Markdown files
// equal to code that compiles and runs.
//
// Every fenced Go block of a Markdown file is a quotation, announced on the
// line just before its fence by an HTML comment (which Markdown renderers
// do not show):
//
//	<!-- snippet: exporters/example_test.go serveMetrics -->
//
// The path is relative to the module root; the names that follow are
// top-level declarations of that file. The block must be exactly the
// source of those declarations, each with its doc comment, in the order
// named, separated by a blank line; naming a type quotes the methods the
// file declares on it too, after the type. A block of another language
// may quote a whole file the same way, with a marker that names no
// declaration. The quoted file is a test file
// with an Example that runs the code, or a program under examples/ with
// tests of its own, so a snippet that no longer compiles or works fails
// the build or a test, and [Check] fails when the Markdown and the code
// part ways.
package snippets
