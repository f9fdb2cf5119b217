package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"github.com/spf13/cobra"
)

// detailed is an error with lines to print above its short error line: a
// *lifecycle.RefusalError whose details were not shown, retire's steps
// taken before a blocked one.
type detailed interface {
	error
	DetailLines() []string
}

// printRefusal writes the details of a refusal in err, unless they were
// already shown (the preflight's FAIL lines, retire's plan), so that they
// appear once, above the short error line kubectl's error handling prints
// last.
func printRefusal(w io.Writer, err error) {
	var d detailed
	if !errors.As(err, &d) {
		return
	}
	for _, line := range d.DetailLines() {
		fmt.Fprintln(w, line)
	}
}

// FindingsError is what diff, check-upgrade and doctor return, after
// printing their report, when it holds an error-level finding. Like
// kubectl diff when it finds differences, the plugin then exits with
// code 1 and prints nothing more.
type FindingsError struct {
	// Summary is for callers in-process, e.g. "2 errors".
	Summary string
}

func (e *FindingsError) Error() string { return "error-level findings: " + e.Summary }

// CheckError wraps every other failure of those commands (bad flags,
// unreadable files, the API server's errors): the plugin exits with code 2
// (kubectl diff's ">1"), so that 1 always means "findings".
type CheckError struct{ Err error }

func (e *CheckError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *CheckError) Unwrap() error { return e.Err }

// checkCommand makes cmd follow kubectl diff's exit codes: its RunE's
// errors and flag errors become *CheckError, except *FindingsError.
func checkCommand(cmd *cobra.Command) *cobra.Command {
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return asCheckError(run(c, args))
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return asCheckError(err) })
	return cmd
}

func asCheckError(err error) error {
	var found *FindingsError
	if err == nil || errors.As(err, &found) {
		return err
	}
	return &CheckError{Err: err}
}

// Interrupted is err as the user should read it when ctx, the command's
// context, was cancelled by SIGINT or SIGTERM: a bare "context canceled"
// (or client-go's "Unable to connect to the server: context canceled")
// says nothing of what happened. Every step writes only once its
// preflight has passed, one write at a time; a migration's report and
// checkpoint, printed before, say what it wrote. Other errors, and errors
// of a context that was not cancelled, are returned as they are.
func Interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	var urlErr *url.Error
	if err == context.Canceled || errors.As(err, &urlErr) && urlErr.Err == context.Canceled {
		return fmt.Errorf("interrupted: an interrupted preflight changed nothing (what a migration wrote is in its report above); re-run the command to finish")
	}
	// An error that says more (the steps retire took, say) keeps it.
	return fmt.Errorf("interrupted: %w", err)
}
