package main

import "github.com/xdslens/xdslens/internal/xdswatch"

// main runs the command, whose code is package internal/xdswatch.
func main() { xdswatch.Main() }
