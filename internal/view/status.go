package view

import (
	"fmt"
	"io"
	"strings"

	"github.com/crdversion/kubectl-crdversion/internal/lifecycle"
	"github.com/crdversion/kubectl-crdversion/internal/report"
	"k8s.io/cli-runtime/pkg/printers"
)

// Status writes the human-readable view of r.
func Status(out io.Writer, r *report.Status) error {
	w := printers.GetNewTabWriter(out)
	fmt.Fprintf(w, "CRD:\t%s (kind %s, %s)\n", r.CRD.Name, r.CRD.Kind, strings.ToLower(r.CRD.Scope))
	transition := ""
	switch {
	case r.OldVersion != "" && r.NewVersion != "":
		transition = fmt.Sprintf(" [%s -> %s]", r.OldVersion, r.NewVersion)
	case r.OldVersion != "":
		transition = fmt.Sprintf(" [%s]", r.OldVersion)
	}
	fmt.Fprintf(w, "State:\t%s, %s%s\n", r.State, r.StateDescription, transition)
	fmt.Fprintf(w, "Storage version:\t%s\n", Dash(r.StorageVersion))
	fmt.Fprintf(w, "Stored versions:\t[%s]\n", strings.Join(r.StoredVersions, ", "))
	fmt.Fprintf(w, "Default version:\t%s\n", Dash(r.DefaultVersion))
	fmt.Fprintf(w, "Conversion:\t%s\n", conversionText(r.Conversion))
	if r.Objects != nil {
		switch {
		case r.Objects.Version == "":
			fmt.Fprintf(w, "Objects:\tunknown (%s)\n", r.Objects.Error)
		case r.Objects.Error != "":
			fmt.Fprintf(w, "Objects:\tunknown (listing failed, see findings)\n")
		default:
			fmt.Fprintf(w, "Objects:\t%d (listed at %s)\n", r.Objects.Count, r.Objects.Version)
		}
	}
	if refs := r.References; refs != nil {
		floor := ""
		if len(refs.Unseen) > 0 {
			floor = fmt.Sprintf("; %d resource(s) not read: %s", len(refs.Unseen), strings.Join(refs.Unseen, ", "))
		}
		if len(refs.Versions) == 0 {
			fmt.Fprintf(w, "References:\tnone name a version other than %s (%d objects of %d resources read%s)\n", Dash(r.StorageVersion), refs.Objects, refs.Resources, floor)
		}
		for _, v := range refs.Versions {
			name, repair := r.CRD.Group+"/"+v.Version, "repair: "+lifecycle.Crdversion("repair-references", r.CRD.Name, v.Version).String()
			if !lifecycle.IsVersionName(v.Version) {
				// repair-references takes version names only.
				name, repair = fmt.Sprintf("%q", name), "not a version name: edit them by hand"
			}
			fmt.Fprintf(w, "References:\t%d object(s) of %d kind(s) still name %s (%d reference(s); %s)%s\n",
				v.Objects, v.Resources, name, v.References, repair, floor)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	w = printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "VERSION\tSERVED\tSTORAGE\tDEPRECATED\tSTORED\tPRIORITY\tSCHEMA")
	for _, v := range r.Versions {
		if !v.InSpec {
			fmt.Fprintf(w, "%s\t-\t-\t-\t%s\t-\tnot in spec.versions\n", v.Name, YesNo(v.InStoredVersions))
			continue
		}
		prio := fmt.Sprint(v.Priority)
		if v.Default {
			prio += " (default)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, YesNo(v.Served), YesNo(v.Storage), YesNo(v.Deprecated), YesNo(v.InStoredVersions), prio, v.Schema)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(out)
		fmt.Fprintln(out, "Findings:")
		for _, f := range r.Findings {
			fmt.Fprintf(out, "  %s: %s\n", strings.ToUpper(string(f.Severity)), f.Message)
			if f.Fix != "" {
				fmt.Fprintf(out, "    fix: %s\n", f.Fix)
			}
		}
	}
	fmt.Fprintln(out)
	switch {
	case r.Next == nil:
		fmt.Fprintln(out, "Next: nothing to do")
	case r.Next.Command == "":
		fmt.Fprintf(out, "Next: %s\n", r.Next.Reason)
		if r.Next.Loss != "" {
			fmt.Fprintf(out, "  WARNING: %s\n", r.Next.Loss)
		}
	default:
		fmt.Fprintf(out, "Next: %s\n  %s\n", r.Next.Command, r.Next.Reason)
	}
	return nil
}

func conversionText(c lifecycle.Conversion) string {
	if c.Webhook == nil {
		return c.Strategy
	}
	target := c.Webhook.URL
	if target == "" {
		target = "service " + c.Webhook.Service
	}
	return fmt.Sprintf("%s (%s, conversionReviewVersions [%s])", c.Strategy, target, strings.Join(c.Webhook.ConversionReviewVersions, ", "))
}
