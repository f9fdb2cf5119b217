// Command slowest reads the output of `go test -json` on stdin, prints what
// `go test` without -json prints (build errors, the output of failing tests
// and of failing packages, each package's ok/FAIL line) as it comes, and then
// the slowest top-level tests of each package with their durations.
//
//	go test -json ./... | go run .ci/slowest.go [-n 20] [-list]
//
// A test's time is from its start (or its continuing after t.Parallel) to
// its end, its parallel subtests included. -list prints only the slowest
// tests (of a saved -json file, say). It exits 0: the exit status to keep
// is go test's (set -o pipefail).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (go doc cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output
	Test       string
	Elapsed    float64
	Output     string
}

type timing struct {
	pkg, test, action string
	elapsed           float64
}

func main() {
	n := flag.Int("n", 20, "how many of the slowest top-level tests to print")
	list := flag.Bool("list", false, "print only the slowest tests, not go test's output")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	timings, pkgs := read(os.Stdin, out, !*list)
	sort.SliceStable(timings, func(i, j int) bool { return timings[i].elapsed > timings[j].elapsed })
	fmt.Fprintf(out, "== the %d slowest of %d top-level tests", min(*n, len(timings)), len(timings))
	for _, p := range pkgs {
		fmt.Fprintf(out, "; %s %.1fs", p.pkg, p.elapsed)
	}
	fmt.Fprintln(out)
	for i, t := range timings {
		if i == *n {
			break
		}
		fmt.Fprintf(out, "%8.1fs  %-4s  %s  %s\n", t.elapsed, strings.ToUpper(t.action), t.test, t.pkg)
	}
}

// read passes go test's usual output to out (when echo) and returns the
// top-level tests' and the packages' durations.
func read(in io.Reader, out *bufio.Writer, echo bool) (tests, pkgs []timing) {
	// Output of a test is held until it ends: shown when it failed.
	held := map[string][]string{}
	// When each top-level test started or last continued (after
	// t.Parallel): a test whose subtests run in parallel reports as its
	// Elapsed only its own function's time, not theirs.
	began := map[string]time.Time{}
	var order []string // tests in the order they started, for output never ended
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not an event (go vet's or the go command's own text).
			if echo {
				fmt.Fprintln(out, sc.Text())
			}
			continue
		}
		// A test's output, its subtests' included, is held under its
		// top-level test, in the order it came.
		top, _, _ := strings.Cut(e.Test, "/")
		key := e.Package + " " + top
		switch {
		case e.Action == "build-output":
			if echo {
				out.WriteString(e.Output)
				out.Flush()
			}
		case e.Action == "output" && e.Test == "":
			// A package's own output shows when it fails, before its
			// FAIL line; its summary line always.
			summary := strings.HasPrefix(e.Output, "ok  \t") || strings.HasPrefix(e.Output, "?   \t") || strings.HasPrefix(e.Output, "FAIL\t")
			if !summary {
				held[key] = append(held[key], e.Output)
				continue
			}
			if echo {
				if strings.HasPrefix(e.Output, "FAIL\t") {
					out.WriteString(strings.Join(held[key], ""))
				}
				out.WriteString(e.Output)
				out.Flush()
			}
			delete(held, key)
		case e.Action == "output":
			if _, ok := held[key]; !ok {
				order = append(order, key)
			}
			if !strings.HasPrefix(e.Output, "=== ") {
				held[key] = append(held[key], e.Output)
			}
		case e.Test != "" && e.Test == top && (e.Action == "run" || e.Action == "cont"):
			began[key] = e.Time
		case e.Test != "" && e.Test == top && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			if b, ok := began[key]; ok && !e.Time.IsZero() {
				e.Elapsed = max(e.Elapsed, e.Time.Sub(b).Seconds())
			}
			if echo && e.Action == "fail" {
				out.WriteString(strings.Join(held[key], ""))
				out.Flush()
			}
			delete(held, key)
			tests = append(tests, timing{pkg: e.Package, test: e.Test, action: e.Action, elapsed: e.Elapsed})
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			pkgs = append(pkgs, timing{pkg: e.Package, action: e.Action, elapsed: e.Elapsed})
		}
	}
	if echo {
		// Tests that never ended (a panic, a timeout): their output.
		for _, key := range order {
			if lines, ok := held[key]; ok && len(lines) > 0 {
				fmt.Fprintf(out, "(output of %s, which did not end)\n%s", key, strings.Join(lines, ""))
			}
		}
	}
	return tests, pkgs
}
