// Package cireport renders check-upgrade's report for CI systems: SARIF
// 2.1.0 for code scanning (github.com/owenrumney/go-sarif/v3), JUnit XML
// for test reports (github.com/jstemmer/go-junit-report/v2's types), and
// GitHub Actions workflow commands that annotate the release's files.
//
// All three carry the same findings as the report, located at the
// manifest file and line they are about (see Locator), so that their
// counts agree with the report's summary and with the exit code: each
// error finding is a SARIF result of level "error", a failed JUnit test
// case and an ::error annotation; warnings and notes are "warning" and
// "note" results, passed test cases and ::warning / ::notice annotations.
package cireport

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jstemmer/go-junit-report/v2/junit"
	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"github.com/crdversion/kubectl-crdversion/internal/schemadiff"
	"github.com/crdversion/kubectl-crdversion/internal/upgrade"
)

// Tool names the producer in SARIF and JUnit.
const (
	ToolName = "kubectl-crdversion"
	ToolURI  = "https://github.com/crdversion/kubectl-crdversion"
	// DocsURI is where the finding codes are explained.
	DocsURI = ToolURI + "/blob/main/docs/upgrade.md"
)

// finding is one finding of one plan, with its location.
type finding struct {
	plan upgrade.Plan
	f    schemadiff.Finding
	at   Location
}

// each is every finding of r in order, located by l.
func each(r *report.UpgradeCheck, l *Locator) []finding {
	var out []finding
	for _, p := range r.CRDs {
		for _, f := range p.Findings {
			out = append(out, finding{plan: p, f: f, at: l.Locate(p, f)})
		}
	}
	return out
}

// text is the finding's message as one line naming its CRD, version and
// path.
func (x finding) text() string {
	at := strings.TrimSpace(x.f.Version + " " + x.f.Path)
	if at != "" {
		at = " " + at
	}
	if x.f.Acknowledged {
		at += " (acknowledged)"
	}
	return fmt.Sprintf("%s%s: %s", x.plan.Name, at, x.f.Message)
}

// severity is the finding's severity as the CI formats report it: a
// note when an --allow acknowledged it (it fails no check).
func (x finding) severity() lifecycle.Severity {
	if x.f.Acknowledged {
		return lifecycle.SeverityInfo
	}
	return x.f.Severity
}

// level is the SARIF level of a severity.
func level(s lifecycle.Severity) string {
	switch s {
	case lifecycle.SeverityError:
		return "error"
	case lifecycle.SeverityWarning:
		return "warning"
	}
	return "note"
}

// SARIF writes r as a SARIF 2.1.0 log with one run: a rule per finding
// code, a result per finding at its file and line. toolVersion is the
// plugin's version. The log is validated against the SARIF 2.1.0 schema
// before it is written; an invalid one is an error.
func SARIF(w io.Writer, r *report.UpgradeCheck, l *Locator, toolVersion string) error {
	run := sarif.NewRunWithInformationURI(ToolName, ToolURI)
	if toolVersion != "" {
		run.Tool.Driver.WithVersion(toolVersion)
	}
	for _, x := range each(r, l) {
		uri := URI(x.at.File)
		run.AddRule(x.f.Code).WithDescription(x.f.Code).WithHelpURI(DocsURI)
		run.AddDistinctArtifact(uri)
		res := run.CreateResultForRule(x.f.Code).
			WithLevel(level(x.severity())).
			WithMessage(sarif.NewTextMessage(x.text())).
			AddLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().
				WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri)).
				WithRegion(sarif.NewSimpleRegion(x.at.Line, x.at.Line))))
		if x.f.Acknowledged {
			// Code scanning shows a suppressed result as dismissed, not
			// open: the change is deliberate (--allow).
			res.AddSuppression(sarif.NewSuppression().WithKind("external").WithJustification("acknowledged with --allow as a deliberate change"))
		}
	}
	log := sarif.NewReport()
	log.AddRun(run)
	if err := log.Validate(); err != nil {
		return fmt.Errorf("the SARIF log is not valid SARIF 2.1.0: %w", err)
	}
	return log.PrettyWrite(w)
}

// JUnit writes r as JUnit XML: a test suite per CRD, a test case per
// finding (an error finding fails it; a warning or note passes with its
// message as output), and a passing "apply" case for a CRD without
// findings, so that every CRD is listed.
func JUnit(w io.Writer, r *report.UpgradeCheck, l *Locator) error {
	suites := junit.Testsuites{Name: ToolName + " check-upgrade " + r.Source}
	for _, p := range r.CRDs {
		suite := junit.Testsuite{Name: p.Name}
		for _, f := range p.Findings {
			x := finding{plan: p, f: f, at: l.Locate(p, f)}
			tc := junit.Testcase{Classname: p.Name, Name: strings.Join(strings.Fields(f.Code+" "+f.Version+" "+f.Path), " ")}
			where := fmt.Sprintf("%s:%d", x.at.File, x.at.Line)
			switch x.severity() {
			case lifecycle.SeverityError:
				tc.Failure = &junit.Result{Message: x.text(), Type: f.Code, Data: where + ": " + x.text()}
			default:
				tc.SystemOut = &junit.Output{Data: where + ": " + string(x.severity()) + ": " + x.text()}
			}
			suite.AddTestcase(tc)
		}
		if len(p.Findings) == 0 {
			suite.AddTestcase(junit.Testcase{Classname: p.Name, Name: "apply " + strings.ToLower(p.Apply)})
		}
		suites.AddSuite(suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	if err := suites.WriteXML(w); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Annotations writes r's findings as GitHub Actions workflow commands
// (::error, ::warning, ::notice with file, line and title), which a
// workflow step's output turns into annotations on the pull request.
// Values are escaped as the runner expects ('%', CR and LF; in
// properties also ':' and ',').
func Annotations(w io.Writer, r *report.UpgradeCheck, l *Locator) error {
	for _, x := range each(r, l) {
		cmd := "notice"
		switch x.severity() {
		case lifecycle.SeverityError:
			cmd = "error"
		case lifecycle.SeverityWarning:
			cmd = "warning"
		}
		title := x.f.Code + " (" + x.plan.Name + ")"
		if _, err := fmt.Fprintf(w, "::%s file=%s,line=%d,title=%s::%s\n", cmd, property(RepoPath(x.at.File)), x.at.Line, property(title), data(x.text())); err != nil {
			return err
		}
	}
	return nil
}

// RepoPath is file as code scanning and annotations expect it: relative
// to the working directory (the repository's checkout) when it lies
// below it, with '/' separators and no leading "./".
func RepoPath(file string) string {
	if filepath.IsAbs(file) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
		}
	}
	return strings.TrimPrefix(filepath.ToSlash(filepath.Clean(file)), "./")
}

// URI is RepoPath(file) as a SARIF artifact URI: each segment
// percent-encoded (a '%', '#', '?' or space in a file name is not taken
// for an escape, a fragment or a query).
func URI(file string) string {
	segments := strings.Split(RepoPath(file), "/")
	for i, seg := range segments {
		segments[i] = url.PathEscape(seg)
	}
	return strings.Join(segments, "/")
}

// data escapes a workflow command's message.
func data(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// property escapes a workflow command's property value.
func property(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
