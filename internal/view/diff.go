package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"k8s.io/cli-runtime/pkg/printers"
)

// Diff writes r as diff prints it without -o: per CRD a summary line and a
// table of its findings (severity, version, path, code, message), then the
// total when more than one CRD was compared.
func Diff(out io.Writer, r *report.Diff) error {
	if r.Rules != "" {
		fmt.Fprintf(out, "Rules: %s\n\n", r.Rules)
	}
	for i, c := range r.CRDs {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s: %s\n", crdHeading(c), SummaryText(c.Summary()))
		if len(c.Findings) == 0 {
			continue
		}
		w := printers.GetNewTabWriter(out)
		// Under a rulebook, its rule names the finding; otherwise the code.
		fmt.Fprintln(w, "SEVERITY\tVERSION\tPATH\t"+map[bool]string{false: "CODE", true: "RULE"}[r.Rules != ""]+"\tMESSAGE")
		for _, f := range c.Findings {
			name := f.Code
			if r.Rules != "" && f.Rule != "" {
				name = f.Rule
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", severityText(f.Severity, f.Acknowledged), Dash(f.Version), f.Path, name, f.Message)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if len(r.CRDs) > 1 {
		fmt.Fprintf(out, "\nTotal: %s\n", SummaryText(r.Summary))
	}
	return nil
}

// DiffMarkdown writes r as a Markdown document (diff -o markdown), for a
// pull-request comment: a heading, the summary and a table per CRD.
func DiffMarkdown(out io.Writer, r *report.Diff) error {
	fmt.Fprintf(out, "## CRD compatibility: `%s` → `%s`\n\n%s\n", r.Old, r.New, SummaryText(r.Summary))
	if r.Rules != "" {
		fmt.Fprintf(out, "\nJudged by the rules of `%s`.\n", r.Rules)
	}
	for _, c := range r.CRDs {
		fmt.Fprintf(out, "\n### `%s`: %s\n", crdHeading(c), SummaryText(c.Summary()))
		if len(c.Findings) == 0 {
			continue
		}
		fmt.Fprintln(out, "\n| severity | version | path | code | crdify rule | explanation |\n|---|---|---|---|---|---|")
		for _, f := range c.Findings {
			mark := severityMark[f.Severity]
			if f.Acknowledged {
				mark += " (acknowledged)"
			}
			fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s |\n", mark, Dash(f.Version), mdCode(mdCell(f.Path)), f.Code, Dash(f.Rule), mdCell(f.Message))
		}
	}
	return nil
}

func crdHeading(c report.CRDDiff) string {
	if c.From != "" {
		return fmt.Sprintf("%s %s -> %s", c.Name, c.From, c.To)
	}
	return c.Name
}

// mdCell escapes what would break a Markdown table cell.
// mdCode is s as a Markdown code span: fenced with one backtick more than
// the longest run of backticks in s (a property name may hold some), and
// padded with a space where s starts or ends with one (CommonMark).
func mdCode(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

var severityMark = map[lifecycle.Severity]string{lifecycle.SeverityError: "🔴 error", lifecycle.SeverityWarning: "🟡 warning", lifecycle.SeverityInfo: "⚪ info"}

// severityText is a finding's severity, and "(acknowledged)" after it
// when an --allow acknowledged it.
func severityText(s lifecycle.Severity, acknowledged bool) string {
	if acknowledged {
		return string(s) + " (acknowledged)"
	}
	return string(s)
}
