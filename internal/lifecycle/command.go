package lifecycle

import (
	"strings"
)

// Command is a command line as a value: what a finding, a next step, a
// retire step or an upgrade plan tells the user to run. Domain packages
// build it; the CLI renders it with the connection flags the user typed
// (--context, --kubeconfig, …), so that a pasted line reaches the same
// cluster. Tool "" is kubectl crdversion; "kubectl" is kubectl itself.
type Command struct {
	// Tool is "" for a kubectl crdversion command, "kubectl" for one of
	// kubectl's own (patch, apply).
	Tool string `json:"tool,omitempty"`
	// Verb is the subcommand: add-version, migrate, patch, apply, …
	Verb string `json:"verb"`
	// Args are the positional arguments, in order.
	Args []string `json:"args,omitempty"`
	// Flags are the command's own flags, in order.
	Flags []Flag `json:"flags,omitempty"`
}

// Flag is one flag of a Command. Name is without dashes ("from", "p");
// one-letter names render with one dash. An empty Value is a boolean flag
// that is set (--migrate). Joined renders the value after "=": a flag
// whose value is optional (--own-priority-level=3) takes it only so.
type Flag struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Joined bool   `json:"joined,omitempty"`
}

// Tools of a Command.
const (
	// ToolKubectl is Command.Tool for kubectl's own commands.
	ToolKubectl = "kubectl"
	// ToolHelm is Command.Tool for helm's commands (helm upgrade of the
	// release a check is for).
	ToolHelm = "helm"
)

// Helm returns helm's command verb with args.
func Helm(verb string, args ...string) Command {
	return Command{Tool: ToolHelm, Verb: verb, Args: args}
}

// helmFlags are the names helm gives kubectl's connection flags. A
// connection flag helm has no equivalent for (--cluster, --user,
// --client-certificate, --client-key, --as-uid) is passed under its
// kubectl name: helm refuses the line ("unknown flag") rather than reach
// another cluster than the one checked.
var helmFlags = map[string]string{
	"context": "kube-context", "server": "kube-apiserver", "tls-server-name": "kube-tls-server-name",
	"certificate-authority": "kube-ca-file", "insecure-skip-tls-verify": "kube-insecure-skip-tls-verify",
	"as": "kube-as-user", "as-group": "kube-as-group",
}

// Crdversion returns the kubectl crdversion command verb with args.
func Crdversion(verb string, args ...string) Command {
	return Command{Verb: verb, Args: args}
}

// Kubectl returns kubectl's own command verb with args.
func Kubectl(verb string, args ...string) Command {
	return Command{Tool: ToolKubectl, Verb: verb, Args: args}
}

// With returns c with the flag name=value appended (value "" for a set
// boolean flag).
func (c Command) With(name, value string) Command {
	return c.WithFlag(Flag{Name: name, Value: value})
}

// WithFlag returns c with f added after its flags.
func (c Command) WithFlag(f Flag) Command {
	c.Flags = append(append([]Flag(nil), c.Flags...), f)
	return c
}

// String renders c without connection flags, as it is recorded in the
// machine-readable output.
func (c Command) String() string { return c.Render(nil) }

// Render renders c as a shell command line with global placed where
// kubectl accepts them: for kubectl crdversion after the plugin name
// (kubectl refuses flags before a plugin's name: "flags cannot be placed
// before plugin name"), for kubectl right after "kubectl", for helm at
// the end under helm's names. Values that the
// shell would split or expand are single-quoted.
func (c Command) Render(global []Flag) string {
	words := c.Argv(global)
	for i, w := range words {
		words[i] = quote(w)
	}
	return strings.Join(words, " ")
}

// Argv is c as the words a shell would pass to the program, from "kubectl"
// (or "helm") on, with global placed as Render places them; for helm
// after the command's own flags, under helm's names.
func (c Command) Argv(global []Flag) []string {
	if c.Tool == ToolHelm {
		words := append([]string{"helm", c.Verb}, c.Args...)
		words = appendFlags(words, c.Flags)
		for _, g := range global {
			if name, ok := helmFlags[g.Name]; ok {
				g.Name = name
			}
			words = appendFlags(words, []Flag{g})
		}
		return words
	}
	words := []string{"kubectl"}
	if c.Tool == "" {
		words = append(words, "crdversion")
	}
	words = appendFlags(words, global)
	words = append(words, c.Verb)
	words = append(words, c.Args...)
	return appendFlags(words, c.Flags)
}

// RenderAll renders commands to be run in order, joined by " && " so that
// a pasted line stops at the first that fails; "" for none.
func RenderAll(cmds []Command, global []Flag) string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.Render(global)
	}
	return strings.Join(out, " && ")
}

func appendFlags(parts []string, flags []Flag) []string {
	for _, f := range flags {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		switch {
		case f.Value == "":
			parts = append(parts, dash+f.Name)
		case f.Joined || f.Value == "true" || f.Value == "false":
			// A boolean flag, and one whose value is optional, take
			// their value only after "=".
			parts = append(parts, dash+f.Name+"="+f.Value)
		default:
			parts = append(parts, dash+f.Name, f.Value)
		}
	}
	return parts
}

// Quote is s as one word of a POSIX shell: single-quoted when the shell
// would split, expand or glob it (a flag value such as
// --allow-pruning=.spec.ports[*].name), as printed commands quote theirs.
func Quote(s string) string { return quote(s) }

// quote single-quotes s when a POSIX shell would split, expand or glob it.
// A placeholder such as <new-version> stays as it is: it marks a value the
// user must choose (pasted unchanged, the shell refuses the line).
func quote(s string) string {
	if s != "" && strings.IndexFunc(s, unsafeInShell) < 0 || IsPlaceholder(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func unsafeInShell(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_./:=,@%+", r)
}

// Placeholders in a printed command (see IsPlaceholder): a version of the
// CRD the user picks, and a new version the user names.
const (
	PlaceholderVersion    = "<version>"
	PlaceholderNewVersion = "<new-version>"
)

// IsPlaceholder reports whether s is a placeholder such as <new-version>
// in a command: a value the user must choose.
func IsPlaceholder(s string) bool {
	return len(s) > 2 && s[0] == '<' && s[len(s)-1] == '>' && !strings.ContainsAny(s[1:len(s)-1], "<> '\"")
}
