// Package auditlog reads Kubernetes API server audit logs — the JSON-lines
// files of audit.k8s.io/v1 Events that kube-apiserver writes with
// --audit-log-path (plain, or gzip as rotated and shipped) — and groups the
// requests to given group/version/resources by user, user agent and verb.
//
// A log is read as a stream in memory bounded by its longest line and the
// number of distinct clients: every line is checked for the shape of an
// event and its stage timestamp taken for the log's time span; only lines
// that name one of the resources (or an API server identity lease) are
// decoded in full, into k8s.io/apiserver's audit v1 Event type.
package auditlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Client is the requests of one user with one user agent and verb to one
// resource version.
type Client struct {
	User      string `json:"user"`
	UserAgent string `json:"userAgent"`
	Verb      string `json:"verb"`
	// Requests counts requests: events at their final stage
	// (ResponseComplete, Panic), or, in a log whose policy omits those
	// stages, at their first.
	Requests int64 `json:"requests"`
	// Last is the latest stage timestamp of its events.
	Last time.Time `json:"last"`

	final, started int64
}

// Use is what a log holds about one group/version/resource.
type Use struct {
	Clients []*Client `json:"clients,omitempty"`
	// OpenWatches counts watches started (ResponseStarted) and not
	// finished by the end of the log, by client.
	OpenWatches []*Client `json:"openWatches,omitempty"`
	// Self counts this tool's own requests, left out of Clients.
	Self int64 `json:"self,omitempty"`

	byKey   map[clientKey]*Client
	watches map[string]clientKey // auditID → client, for open watches
}

type clientKey struct{ user, agent, verb string }

// Summary is what one audit log holds.
type Summary struct {
	// Name is the file's path (or the name given to Read).
	Name string `json:"name"`
	// Events counts audit events, Malformed the other non-empty lines
	// (truncated, garbled, or not audit.k8s.io/v1 Events).
	Events    int64 `json:"events"`
	Malformed int64 `json:"malformed"`
	// FirstMalformed is the number of the first malformed line (from 1).
	FirstMalformed int64 `json:"firstMalformed,omitempty"`
	// First and Last are the earliest and latest stage timestamps: the
	// span of time the log covers.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Identities are the API server identity leases (kube-system,
	// apiserver-…) that system:apiserver renewed in the log: the
	// instances that wrote it, when the audit policy records those
	// renewals.
	Identities []string `json:"identities,omitempty"`
	// Use is per requested group/version/resource.
	Use map[schema.GroupVersionResource]*Use `json:"-"`

	finalStages bool
}

// NotAuditLogError is returned when a file holds no audit event at all.
type NotAuditLogError struct {
	Name   string
	Line   int64
	Sample string
}

func (e *NotAuditLogError) Error() string {
	sample := e.Sample
	if len(sample) > 32 {
		sample = sample[:32] + "…"
	}
	return fmt.Sprintf("%s is not an audit log (JSON lines, audit.k8s.io/v1): line %d: %q", e.Name, e.Line, sample)
}

// IsSelf tells this tool's own requests by user agent; they are counted in
// Use.Self and left out of Use.Clients.
type IsSelf func(userAgent string) bool

// ReadFile reads the audit log at path (gzip when it starts with gzip's
// magic bytes); see Read.
func ReadFile(path string, targets []schema.GroupVersionResource, self IsSelf) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, targets, self)
}

// Read streams an audit log from r (plain or gzip) and groups the requests
// to targets. A file without a single audit event is a
// *NotAuditLogError; malformed lines among events are counted, not fatal.
// An empty file is an empty Summary.
func Read(r io.Reader, name string, targets []schema.GroupVersionResource, self IsSelf) (*Summary, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	s := &Summary{Name: name, Use: map[schema.GroupVersionResource]*Use{}}
	var needles [][]byte
	for _, t := range targets {
		s.Use[t] = &Use{byKey: map[clientKey]*Client{}, watches: map[string]clientKey{}}
		needles = append(needles, []byte(`"resource":"`+t.Resource+`"`))
	}
	needles = append(needles, []byte(`"name":"apiserver-`))
	var long []byte
	var lineNo int64
	var firstBad []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			lineNo++
			if !s.line(bytes.TrimSpace(line), needles, self) {
				s.Malformed++
				if s.FirstMalformed == 0 {
					s.FirstMalformed = lineNo
					firstBad = append([]byte(nil), line[:min(len(line), 80)]...)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, lineNo+1, err)
		}
	}
	if s.Events == 0 && s.Malformed > 0 {
		return nil, &NotAuditLogError{Name: name, Line: s.FirstMalformed, Sample: string(bytes.TrimSpace(firstBad))}
	}
	for _, u := range s.Use {
		for _, c := range u.byKey {
			c.Requests = c.final
			if !s.finalStages {
				c.Requests = c.started
			}
			u.Clients = append(u.Clients, c)
		}
		slices.SortFunc(u.Clients, byLast)
		for _, k := range u.watches {
			u.OpenWatches = append(u.OpenWatches, u.byKey[k])
		}
		slices.SortFunc(u.OpenWatches, byLast)
		u.OpenWatches = slices.Compact(u.OpenWatches)
	}
	slices.Sort(s.Identities)
	return s, nil
}

func byLast(a, b *Client) int {
	if c := b.Last.Compare(a.Last); c != 0 {
		return c
	}
	return strings.Compare(a.User+a.UserAgent+a.Verb, b.User+b.UserAgent+b.Verb)
}

var (
	stageKey = []byte(`"stageTimestamp":"`)
	kindKey  = []byte(`"kind":"Event"`)
	apiKey   = []byte(`"apiVersion":"audit.k8s.io/v1"`)
)

// line takes one line; it reports false when the line is not an audit
// event.
func (s *Summary) line(line []byte, needles [][]byte, self IsSelf) bool {
	if len(line) == 0 {
		return true // blank lines are neither events nor malformed
	}
	if line[0] != '{' || line[len(line)-1] != '}' || !bytes.Contains(line, kindKey) || !bytes.Contains(line, apiKey) {
		return false
	}
	i := bytes.Index(line, stageKey)
	if i < 0 {
		return false
	}
	rest := line[i+len(stageKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return false
	}
	at, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	if err != nil {
		return false
	}
	candidate := false
	for _, n := range needles {
		if bytes.Contains(line, n) {
			candidate = true
			break
		}
	}
	if candidate {
		var e auditv1.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return false
		}
		s.event(&e, self)
	} else if !s.finalStages && (bytes.Contains(line, []byte(`"stage":"ResponseComplete"`)) || bytes.Contains(line, []byte(`"stage":"Panic"`))) {
		s.finalStages = true
	}
	s.Events++
	if s.First.IsZero() || at.Before(s.First) {
		s.First = at
	}
	if at.After(s.Last) {
		s.Last = at
	}
	return true
}

func (s *Summary) event(e *auditv1.Event, self IsSelf) {
	final := e.Stage == auditv1.StageResponseComplete || e.Stage == auditv1.StagePanic
	s.finalStages = s.finalStages || final
	ref := e.ObjectRef
	if ref == nil {
		return
	}
	if ref.Resource == "leases" && ref.Namespace == "kube-system" && strings.HasPrefix(ref.Name, "apiserver-") &&
		e.User.Username == "system:apiserver" && (e.Verb == "update" || e.Verb == "patch" || e.Verb == "create") &&
		!slices.Contains(s.Identities, ref.Name) {
		s.Identities = append(s.Identities, ref.Name)
	}
	u := s.Use[schema.GroupVersionResource{Group: ref.APIGroup, Version: ref.APIVersion, Resource: ref.Resource}]
	if u == nil {
		return
	}
	if self != nil && self(e.UserAgent) {
		if final {
			u.Self++
		}
		return
	}
	k := clientKey{e.User.Username, e.UserAgent, strings.ToUpper(e.Verb)}
	c := u.byKey[k]
	if c == nil {
		c = &Client{User: k.user, UserAgent: k.agent, Verb: k.verb}
		u.byKey[k] = c
	}
	if final {
		c.final++
	} else if e.Stage == auditv1.StageRequestReceived {
		c.started++
	}
	if t := e.StageTimestamp.Time; t.After(c.Last) {
		c.Last = t.UTC()
	}
	if e.Verb == "watch" {
		switch {
		case e.Stage == auditv1.StageResponseStarted:
			u.watches[string(e.AuditID)] = k
		case final:
			delete(u.watches, string(e.AuditID))
		}
	}
}
