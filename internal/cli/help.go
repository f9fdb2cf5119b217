package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// DetailsAnnotation keys, on a command whose description is longer than
// MaxLongHelp, the full description: --help shows its first paragraph and
// where the rest is, and the command reference (internal/clidocs,
// docs/commands/) shows all of it.
const DetailsAnnotation = "crdversion/details"

// MaxLongHelp is the longest description --help prints, in bytes: about a
// screen's paragraph. kubectl's commands keep theirs short and the
// examples below them; the rest belongs in the reference.
const MaxLongHelp = 800

// shortenLongHelp gives each command under root whose description is
// longer than MaxLongHelp its first paragraph as --help's description,
// followed by the reference page that holds the rest, and keeps the whole
// description under DetailsAnnotation.
func shortenLongHelp(root *cobra.Command) {
	for _, c := range root.Commands() {
		if len(c.Long) <= MaxLongHelp {
			continue
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[DetailsAnnotation] = c.Long
		first, _, _ := strings.Cut(c.Long, "\n\n")
		c.Long = first + "\n\nThe full description is in the command reference: docs/commands/" + referencePage(c) + "."
	}
}

// referencePage is the file name of c's page in docs/commands, as cobra's
// Markdown generator names it.
func referencePage(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "_") + ".md"
}
