// Package view renders the plugin's reports for people: the tables and
// text a command prints without -o (and diff's Markdown). Each function
// writes one report kind to the writer it is given; the commands in
// internal/cli choose the view or the -o printer. Nothing here decides
// what a report says: that is the domain packages' work.
package view

import (
	"fmt"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/report"
)

// SummaryText counts a report's findings in words: "1 error, 2 warnings,
// 0 notes".
func SummaryText(s report.Summary) string {
	text := fmt.Sprintf("%s, %s, %s", Plural(s.Errors, "error"), Plural(s.Warnings, "warning"), Plural(s.Infos, "note"))
	if s.Acknowledged > 0 {
		text += fmt.Sprintf(", %d acknowledged", s.Acknowledged)
	}
	return text
}

// Plural is "1 word" or "n words".
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Dash is s, or "-" for an empty cell.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// YesNo is "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// FirstLine is the first line of s, cut to 160 characters, for a table
// cell.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
