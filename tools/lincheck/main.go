// Command p4cache-lincheck checks a history of memcached operations for
// linearizability with porcupine, key by key (see docs/lincheck.md).
//
// Exit status: 0 linearizable, 1 not linearizable, 2 bad input or timeout
// (the verdict's "error" says which: "bad_input", "timeout", "usage", "io").
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/anishathalye/porcupine"
)

const usage = `usage: p4cache-lincheck [--timeout D] [--slack D] [--jobs N] [--viz DIR] HISTORY|-`

// verdict is what the command prints on stdout.
type verdict struct {
	OK         bool                 `json:"ok"`
	Error      string               `json:"error,omitempty"`
	Message    string               `json:"message,omitempty"`
	Keys       int                  `json:"keys"`
	Operations int                  `json:"operations"`
	Dropped    int                  `json:"dropped"`
	Millis     int64                `json:"ms"`
	PerKey     map[string]keyResult `json:"per_key"`
	Violations []violation          `json:"violations"`
	TimedOut   []string             `json:"timed_out"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("p4cache-lincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up (exit 2, error \"timeout\") after this long; 0 = never")
	slack := fs.Duration("slack", 500*time.Millisecond, "widen every TTL expiry window by this much on each side")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "keys checked at once")
	viz := fs.String("viz", "", "write porcupine's HTML visualization of each failing key into this directory")
	fs.Usage = func() { fmt.Fprintln(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *jobs < 1 || *slack < 0 || *timeout < 0 {
		if err == nil {
			fmt.Fprintln(stderr, usage)
		}
		return fail(stdout, stderr, "usage", "bad arguments")
	}
	in := stdin
	if path := fs.Arg(0); path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fail(stdout, stderr, "io", err.Error())
		}
		defer f.Close()
		in = f
	}
	begin := time.Now()
	h, err := parseHistory(in, *slack)
	if err != nil {
		var bad *badInput
		if errors.As(err, &bad) {
			return fail(stdout, stderr, "bad_input", err.Error())
		}
		return fail(stdout, stderr, "io", err.Error())
	}
	model := newModel(h.start)
	results := checkAll(h, model, options{timeout: *timeout, jobs: *jobs})
	v := verdict{
		OK: true, Keys: len(h.keys), Operations: h.read, Dropped: h.dropped,
		PerKey: map[string]keyResult{}, Violations: []violation{}, TimedOut: []string{},
	}
	for _, r := range results {
		v.PerKey[r.Key] = r
		switch r.Result {
		case "illegal":
			v.OK = false
			vio := explain(r, h.byKey[r.Key], h.start)
			if *viz != "" {
				vio.Viz = writeViz(model, r, *viz, stderr)
			}
			v.Violations = append(v.Violations, vio)
		case "timeout":
			v.TimedOut = append(v.TimedOut, r.Key)
		}
	}
	v.Millis = time.Since(begin).Milliseconds()
	code := 0
	switch {
	case len(v.Violations) > 0:
		code = 1 // a violation is definite even if other keys timed out
		fmt.Fprintf(stderr, "p4cache-lincheck: NOT linearizable: %d of %d keys\n", len(v.Violations), v.Keys)
	case len(v.TimedOut) > 0:
		v.OK = false
		v.Error = "timeout"
		v.Message = fmt.Sprintf("timed out after %s: %d of %d keys unchecked", *timeout, len(v.TimedOut), v.Keys)
		fmt.Fprintln(stderr, "p4cache-lincheck: "+v.Message)
		code = 2
	}
	printJSON(stdout, v)
	return code
}

// fail prints a verdict that names the error, and returns exit status 2.
func fail(stdout, stderr io.Writer, kind, msg string) int {
	fmt.Fprintf(stderr, "p4cache-lincheck: %s: %s\n", kind, msg)
	printJSON(stdout, verdict{
		Error: kind, Message: msg, PerKey: map[string]keyResult{},
		Violations: []violation{}, TimedOut: []string{},
	})
	return 2
}

func printJSON(w io.Writer, v verdict) {
	b, _ := json.Marshal(v) // plain data: cannot fail
	fmt.Fprintln(w, string(b))
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// writeViz writes the key's visualization and returns its path ("" on failure).
func writeViz(model porcupine.Model, r keyResult, dir string, stderr io.Writer) string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "p4cache-lincheck: --viz: %v\n", err)
		return ""
	}
	name := unsafeName.ReplaceAllString(r.Key, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	path := filepath.Join(dir, fmt.Sprintf("key-%s-%08x.html", name, fnv32(r.Key)))
	if err := porcupine.VisualizePath(model, r.info, path); err != nil {
		fmt.Fprintf(stderr, "p4cache-lincheck: --viz: %v\n", err)
		return ""
	}
	return path
}
