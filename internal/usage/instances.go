package usage

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// IdentityLease is what an API server instance's identity lease in
// kube-system (label apiserver.kubernetes.io/identity=kube-apiserver) says.
// Every kube-apiserver renews its own every 10 s, under a name derived from
// its host name (apiserver-<hash>).
type IdentityLease struct {
	Name           string    `json:"name"`
	HolderIdentity string    `json:"holderIdentity,omitempty"`
	Hostname       string    `json:"hostname,omitempty"`
	RenewTime      time.Time `json:"renewTime"`
	// PeerAddress is the kubernetes.io/peer-advertise-address annotation
	// (host:port), set when the UnknownVersionInteroperabilityProxy
	// feature is on.
	PeerAddress string `json:"peerAddress,omitempty"`
}

// Endpoint is one ready address of the default/kubernetes Service's
// EndpointSlices: where one API server instance serves (its advertise
// address and secure port).
type Endpoint struct {
	Address  string `json:"address"` // host:port
	Hostname string `json:"hostname,omitempty"`
	NodeName string `json:"nodeName,omitempty"`
}

// LeaseFreshness is how recently an identity lease must have been renewed
// for its instance to count as running: kube-apiserver renews every 10 s,
// while the lease's duration (1 h) keeps a stopped instance's lease long
// after it stopped.
const LeaseFreshness = time.Minute

// Instance is one API server instance: its identity lease when known, and
// the address its /metrics is read at.
type Instance struct {
	Lease   string `json:"lease,omitempty"`
	Address string `json:"address,omitempty"`
	// Via is set when the instance is read through another address than
	// its own: the kubeconfig's server, when the cluster has one instance
	// (whose endpoint address may not be reachable from here).
	Via string `json:"via,omitempty"`
}

// String names the instance: "apiserver-abc at 10.0.0.2:6443", or either
// part alone.
func (i Instance) String() string {
	switch {
	case i.Lease != "" && i.Address != "":
		return i.Lease + " at " + i.Address
	case i.Address != "":
		return "the instance at " + i.Address
	default:
		return i.Lease
	}
}

// InstanceSet is the API server instances of a cluster, from the identity
// leases and the kubernetes Service's endpoints.
type InstanceSet struct {
	Instances []Instance `json:"instances"`
	// Leases counts the fresh identity leases, Endpoints the ready
	// addresses of the kubernetes Service.
	Leases    int `json:"leases"`
	Endpoints int `json:"endpoints"`
	// StaleLeases are identity leases not renewed within LeaseFreshness
	// (instances that stopped).
	StaleLeases []string `json:"staleLeases,omitempty"`
	// Unseen says why the set may be incomplete: the leases or endpoints
	// could not be read, or their counts disagree.
	Unseen []string `json:"unseen,omitempty"`
	// Notes are observations that do not make the set incomplete.
	Notes []string `json:"notes,omitempty"`
	// Changed says how the instances found again at the end of the
	// window differ from these (Joined): set by Measure, it makes the
	// metrics source Unknown.
	Changed []string `json:"changed,omitempty"`
}

// MatchInstances pairs identity leases with endpoints at now: a lease
// whose peer-advertise-address or host name names an endpoint is paired
// with it, the rest by count. leasesErr and endpointsErr are why either
// could not be read (nil when they were). When the numbers of fresh
// leases and endpoints differ, the set is incomplete (Unseen).
func MatchInstances(leases []IdentityLease, leasesErr error, endpoints []Endpoint, endpointsErr error, now time.Time) InstanceSet {
	var set InstanceSet
	var fresh []IdentityLease
	for _, l := range leases {
		if now.Sub(l.RenewTime) > LeaseFreshness {
			set.StaleLeases = append(set.StaleLeases, l.Name)
			continue
		}
		fresh = append(fresh, l)
	}
	slices.SortFunc(fresh, func(a, b IdentityLease) int { return strings.Compare(a.Name, b.Name) })
	eps := slices.Clone(endpoints)
	slices.SortFunc(eps, func(a, b Endpoint) int { return strings.Compare(a.Address, b.Address) })
	set.Leases, set.Endpoints = len(fresh), len(eps)
	if leasesErr != nil {
		set.Unseen = append(set.Unseen, "the API server identity leases in kube-system cannot be read ("+oneLine(leasesErr)+"), so the number of instances is not known")
	}
	if endpointsErr != nil {
		set.Unseen = append(set.Unseen, "the endpoints of the default/kubernetes Service cannot be read ("+oneLine(endpointsErr)+"), so the instances' addresses are not known")
	}
	if len(set.StaleLeases) > 0 {
		set.Notes = append(set.Notes, fmt.Sprintf("identity lease(s) not renewed in the last %s, counted as stopped instances: %s", LeaseFreshness, strings.Join(set.StaleLeases, ", ")))
	}

	used := make([]bool, len(eps))
	var unpaired []IdentityLease
	for _, l := range fresh {
		i := slices.IndexFunc(eps, func(e Endpoint) bool {
			return (l.PeerAddress != "" && e.Address == l.PeerAddress) ||
				(l.Hostname != "" && (e.Hostname == l.Hostname || e.NodeName == l.Hostname))
		})
		if i >= 0 && !used[i] {
			used[i] = true
			set.Instances = append(set.Instances, Instance{Lease: l.Name, Address: eps[i].Address})
			continue
		}
		unpaired = append(unpaired, l)
	}
	var free []Endpoint
	for i, e := range eps {
		if !used[i] {
			free = append(free, e)
		}
	}
	if len(unpaired) == len(free) && len(unpaired) == 1 {
		// One lease and one address left: the same instance.
		set.Instances = append(set.Instances, Instance{Lease: unpaired[0].Name, Address: free[0].Address})
	} else {
		for _, e := range free {
			set.Instances = append(set.Instances, Instance{Address: e.Address})
		}
		for _, l := range unpaired {
			set.Instances = append(set.Instances, Instance{Lease: l.Name})
		}
	}
	switch {
	case leasesErr != nil || endpointsErr != nil:
	case set.Leases == 1 && set.Endpoints == 0:
		// One instance, and no endpoint reconciler writing the Service's
		// endpoints (--endpoint-reconciler-type=none): it is the instance
		// behind the kubeconfig's server.
		set.Notes = append(set.Notes, "the kubernetes Service lists no endpoint; the one instance ("+fresh[0].Name+") is the kubeconfig's server")
	case set.Leases != set.Endpoints:
		set.Unseen = append(set.Unseen, fmt.Sprintf("the cluster has %d API server identity lease(s) (%s) but the kubernetes Service lists %d endpoint(s) (%s): an instance without a listed address cannot be read",
			set.Leases, strings.Join(leaseNames(fresh), ", "), set.Endpoints, strings.Join(addresses(eps), ", ")))
	case set.Leases == 0:
		set.Unseen = append(set.Unseen, "no API server instance found: no fresh identity lease in kube-system and no endpoint of the kubernetes Service")
	}
	return set
}

// Joined says which instances of end, the set read again at the end of a
// window, were not in s, the set the window started with: an identity
// lease that was not fresh at the start, an address the kubernetes Service
// did not list then. Such an instance started, or replaced another, inside
// the window; its requests before the end were never read, so a window
// without requests proves nothing about it. What end could not see (its
// own Unseen) is returned too: the instances at the end are then not
// known. One line each, for InstanceSet.Changed; nil when end holds no
// instance that s lacks and saw everything.
func (s InstanceSet) Joined(end InstanceSet) []string {
	var out []string
	for _, u := range end.Unseen {
		out = append(out, "at the end of the window, "+u)
	}
	leases, addrs := map[string]bool{}, map[string]bool{}
	for _, in := range s.Instances {
		leases[in.Lease] = in.Lease != ""
		addrs[in.Address] = in.Address != ""
	}
	for _, in := range end.Instances {
		if (in.Lease != "" && !leases[in.Lease]) || (in.Address != "" && !addrs[in.Address]) {
			out = append(out, fmt.Sprintf("API server instance %s appeared during the window (not among the %d instance(s) at its start): it was not read at the start, so its requests were not counted", in, len(s.Instances)))
		}
	}
	return out
}

func leaseNames(ls []IdentityLease) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

func addresses(es []Endpoint) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Address
	}
	return out
}

// InstanceSample is what reading one instance's /metrics twice gave.
type InstanceSample struct {
	Instance Instance `json:"instance"`
	// First and Second are the two reads (Second nil for a zero window).
	First, Second *Metrics `json:"-"`
	// Err is why the instance could not be read (refused, TLS failure,
	// forbidden, not an API server's metrics).
	Err error `json:"-"`
	// Forbidden is true when Err is the API server's 403.
	Forbidden bool `json:"-"`
}

// AssessInstances is the metrics source for gvr: the requests each
// instance counted between its two reads, summed, and the watches open at
// the second. The source sees everything only when every instance of set
// was read twice without a restart in between; otherwise the instances not
// seen are named (Unseen). window is the time asked for between the reads.
//
// The counters also hold every request since each instance started. With
// a history span (history > 0, --usage-history), requests an instance
// counted before the window make the source Unknown: the counters carry
// no time, so they may come from a client that calls less often than once
// a window and will call again (a CronJob, a dashboard, a reconcile loop
// on a timer). Zero since a start long ago is strong evidence; a count the
// window does not explain is not.
func AssessInstances(gvr schema.GroupVersionResource, set InstanceSet, samples []InstanceSample, window, history time.Duration) SourceReport {
	gv := schema.GroupVersion{Group: gvr.Group, Version: gvr.Version}.String()
	r := SourceReport{Source: SourceMetrics, Name: fmt.Sprintf("/metrics of %d API server instance(s)", len(set.Instances)), WindowSeconds: window.Seconds(), HistorySeconds: history.Seconds()}
	earlier, young := false, false
	r.Unseen = append(r.Unseen, set.Unseen...)
	r.Seen = append(r.Seen, set.Notes...)
	var unread []string
	forbidden := false
	lifetime := map[string]int64{}
	for _, s := range samples {
		name := s.Instance.String()
		if s.Instance.Via != "" {
			name += " (through " + s.Instance.Via + ")"
		}
		if s.Err != nil {
			unread = append(unread, name)
			r.Unseen = append(r.Unseen, fmt.Sprintf("%s: its /metrics cannot be read: %s", name, oneLine(s.Err)))
			forbidden = forbidden || s.Forbidden
			continue
		}
		var second *Snapshot
		if s.Second != nil {
			second = s.Second.Snapshot(gvr)
		}
		rep := Compare(gvr, s.First.Snapshot(gvr), second)
		if rep.Verdict == Unknown {
			r.Unseen = append(r.Unseen, name+": "+rep.Reason)
		}
		r.Requests = addCounts(r.Requests, rep.Window)
		r.Open = addCounts(r.Open, rep.Open)
		lifetime = addCounts(lifetime, rep.Lifetime)
		line := name + ": "
		switch {
		case rep.Verdict == Unknown:
			// The counters restarted between the reads: whatever the
			// second read shows, the window's requests are not known.
			line += fmt.Sprintf("the requests of the last %s are not known (its counters restarted between the reads)", roundDuration(rep.WindowSeconds))
		case len(rep.Window) > 0:
			line += fmt.Sprintf("requests in the last %s: %s", roundDuration(rep.WindowSeconds), byVerb(rep.Window))
		case rep.WindowSeconds > 0:
			line += fmt.Sprintf("no request in the last %s", roundDuration(rep.WindowSeconds))
		default:
			line += "one read, so only open requests tell"
		}
		if len(rep.Open) > 0 {
			line += fmt.Sprintf("; open now: %s", byVerb(rep.Open))
		}
		if len(rep.Lifetime) > 0 {
			since := "since it started"
			if rep.ServerStart != nil {
				since = "since it started at " + rep.ServerStart.Format(time.RFC3339)
			}
			line += fmt.Sprintf("; %s: %s", since, byVerb(rep.Lifetime))
		}
		if rep.DeprecatedRequested {
			line += "; apiserver_requested_deprecated_apis records " + gv + " as requested"
		}
		r.Seen = append(r.Seen, line)
		if before := beforeWindow(rep); history > 0 && rep.Verdict != Unknown && rep.WindowSeconds > 0 && len(before) > 0 {
			earlier = true
			started := "it started"
			if rep.ServerStart != nil {
				started = fmt.Sprintf("it started at %s", rep.ServerStart.Format(time.RFC3339))
			}
			r.Unseen = append(r.Unseen, fmt.Sprintf("%s: %d request(s) to %s since %s came before the last %s (%s); the counters carry no time, so they may be a client that calls less often than once every %s and will call again",
				name, sum(before), gv, started, roundDuration(rep.WindowSeconds), byVerb(before), roundDuration(rep.WindowSeconds)))
		}
		// An instance younger than the history span counted nothing of
		// what came before its start (a restart, a rolling upgrade): zero
		// since then is no evidence for the rest of the span.
		if taken := s.First.taken; history > 0 && rep.Verdict != Unknown && rep.WindowSeconds > 0 && (rep.ServerStart == nil || rep.ServerStart.After(taken.Add(-history))) {
			young = true
			since := "its start is unknown (no process_start_time_seconds)"
			if rep.ServerStart != nil {
				since = fmt.Sprintf("it started at %s, %s before the first read", rep.ServerStart.Format(time.RFC3339), roundDuration(taken.Sub(*rep.ServerStart).Seconds()))
			}
			r.Unseen = append(r.Unseen, fmt.Sprintf("%s: its counters cover only the time since it started, and %s, inside the %s history: the requests of the rest of the span are not known", name, since, roundDuration(history.Seconds())))
		}
	}
	if len(samples) == 0 && len(set.Unseen) == 0 {
		r.Unseen = append(r.Unseen, "no API server instance was read")
	}
	if window == 0 {
		r.Unseen = append(r.Unseen, "the window is 0: one read of /metrics shows open watches only, not the requests that come and go")
	}
	if earlier || young {
		r.WaysOut = append(r.WaysOut, WayPrometheus+", with a --usage-window as long as the longest period of the version's clients (24h, 7d): it has the times the counters lack")
	}
	if earlier {
		r.WaysOut = append(r.WaysOut, fmt.Sprintf("once you know what sent the requests before the window (the objects' creation, this tool's own reads at %s while it migrated, a job that has finished): --usage-history 0 looks at the window only (the counters carry no time, so no shorter span can leave them out)", gv))
	}
	if young {
		r.WaysOut = append(r.WaysOut, "once you know that no client of the version calls less often than the API servers have run: a --usage-history no longer than their uptime (or 0)")
	}
	r.Unseen = append(r.Unseen, set.Changed...)
	if len(set.Changed) > 0 {
		r.WaysOut = append(r.WaysOut, WayStableInstances)
	}
	if len(unread) > 0 || len(set.Changed) > 0 {
		r.WaysOut = append(r.WaysOut, WayPrometheus)
	}
	if len(unread) > 0 {
		if forbidden {
			r.WaysOut = append(r.WaysOut, WayMetricsRBAC)
		}
		r.WaysOut = append(r.WaysOut, "make each instance's address reachable from here with the kubeconfig's credentials (the kubernetes Service's endpoints: kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes)")
	}
	r.Settle()
	return r
}

// beforeWindow are the requests by verb that an instance counted since it
// started and before the window: its lifetime totals less the window's.
func beforeWindow(rep Report) map[string]int64 {
	out := map[string]int64{}
	for verb, n := range rep.Lifetime {
		if d := n - rep.Window[verb]; d > 0 {
			out[verb] = d
		}
	}
	return out
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func addCounts(into, from map[string]int64) map[string]int64 {
	for k, v := range from {
		if v == 0 {
			continue
		}
		if into == nil {
			into = map[string]int64{}
		}
		into[k] += v
	}
	return into
}

// oneLine keeps the first line of an error's text.
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
