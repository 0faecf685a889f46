package main

import (
	"fmt"
	"io"
	"math"
)

type report struct {
	Tool        string         `json:"tool"`
	Format      int            `json:"format"`
	Config      map[string]any `json:"config"`
	Machine     map[string]any `json:"machine"`
	Preload     *preloadResult `json:"preload"`
	Steps       []stepReport   `json:"steps"`
	Unmatched   int64          `json:"unmatched_replies"`
	Errors      []string       `json:"errors"`
	Failed      bool           `json:"failed"`
	Interrupted bool           `json:"interrupted"`
	StopReason  string         `json:"stop_reason"`
	ElapsedS    float64        `json:"elapsed_s"`
}

// latencyPair is one class's latency from the scheduled and from the actual send time.
type latencyPair struct {
	FromScheduled Summary `json:"from_scheduled"`
	FromSent      Summary `json:"from_sent"`
}

type stepReport struct {
	Step         int                    `json:"step"`
	OfferedRate  float64                `json:"offered_rate"`
	WindowS      float64                `json:"window_s"`
	Complete     bool                   `json:"complete"`
	Scheduled    int64                  `json:"scheduled"`
	Sent         int64                  `json:"sent"`
	Gets         int64                  `json:"gets"`
	Sets         int64                  `json:"sets"`
	SendRate     float64                `json:"send_rate"`
	Skipped      int64                  `json:"skipped"`
	SendErrors   int64                  `json:"send_errors"`
	Replies      map[string]int64       `json:"replies"`
	RepliesPerS  map[string]float64     `json:"replies_per_s"`
	Kinds        map[string]int64       `json:"kinds"`
	HitFraction  float64                `json:"hit_fraction"`
	Timeouts     int64                  `json:"timeouts"`
	LateReplies  int64                  `json:"late_replies"`
	LossFraction float64                `json:"loss_fraction"`
	SendLag      Summary                `json:"send_lag_us"`
	Latency      map[string]latencyPair `json:"latency_us"`
}

func round(x float64, nd int) float64 {
	p := math.Pow(10, float64(nd))
	return math.Round(x*p) / p
}

func makeStepReport(k int, st stepPlan, window int64, complete bool, rs *recvStats, ss *sendStats) stepReport {
	w := float64(window) / 1e9
	if w < 0 {
		w = 0
	}
	perS := func(n int64) float64 {
		if w == 0 {
			return 0
		}
		return round(float64(n)/w, 1)
	}
	out := stepReport{Step: k, OfferedRate: st.rate, WindowS: round(w, 4), Complete: complete,
		Scheduled: ss.scheduled, Sent: ss.sent, Gets: ss.gets, Sets: ss.sets,
		SendRate: perS(ss.sent), Skipped: ss.skipped, SendErrors: ss.sendErrors,
		Replies: map[string]int64{}, RepliesPerS: map[string]float64{}, Kinds: map[string]int64{},
		Timeouts: rs.timeouts, LateReplies: rs.late, SendLag: ss.lag.Summary(),
		Latency: map[string]latencyPair{}}
	var all [2]Hist
	var total int64
	for c := 0; c < nClasses; c++ {
		total += rs.replies[c]
		all[0].Merge(&rs.lat[c][0])
		all[1].Merge(&rs.lat[c][1])
		if c == classUnknown && rs.replies[c] == 0 {
			continue
		}
		out.Replies[classNames[c]] = rs.replies[c]
		out.RepliesPerS[classNames[c]] = perS(rs.replies[c])
		out.Latency[classNames[c]] = latencyPair{rs.lat[c][0].Summary(), rs.lat[c][1].Summary()}
	}
	out.Replies["all"] = total
	out.RepliesPerS["all"] = perS(total)
	out.Latency["all"] = latencyPair{all[0].Summary(), all[1].Summary()}
	for i := 0; i < nKinds; i++ {
		out.Kinds[kindNames[i]] = rs.kinds[i]
	}
	if gr := rs.kinds[kindValue] + rs.kinds[kindMiss]; gr > 0 {
		out.HitFraction = round(float64(rs.kinds[kindValue])/float64(gr), 6)
	}
	if ss.sent > 0 {
		out.LossFraction = round(float64(rs.timeouts)/float64(ss.sent), 6)
	}
	return out
}

func printSummary(w io.Writer, rep *report) {
	for _, s := range rep.Steps {
		a := s.Latency["all"].FromScheduled
		part := ""
		if !s.Complete {
			part = " (partial)"
		}
		fmt.Fprintf(w, "step %d%s: offered %.0f/s sent %.0f/s replies %.0f/s (switch %.0f/s, memcached %.0f/s) "+
			"loss %.3f%% hits %.1f%% | from scheduled p50 %.1f p99 %.1f p99.9 %.1f max %.1f us",
			s.Step, part, s.OfferedRate, s.SendRate, s.RepliesPerS["all"], s.RepliesPerS["switch"],
			s.RepliesPerS["memcached"], 100*s.LossFraction, 100*s.HitFraction, a.P50, a.P99, a.P999, a.Max)
		if s.Skipped+s.SendErrors > 0 {
			fmt.Fprintf(w, " | skipped %d send errors %d", s.Skipped, s.SendErrors)
		}
		fmt.Fprintln(w)
	}
	if rep.Unmatched > 0 {
		fmt.Fprintf(w, "unmatched replies: %d\n", rep.Unmatched)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}
