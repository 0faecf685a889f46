package main

import "bytes"

// Reply classes: who answered (the UDP checksum tells, see rawrecv.go).
const (
	classSwitch    = iota // UDP checksum 0: the switch's / XDP program's reply
	classMemcached        // any other checksum, and every TCP reply
	classUnknown          // UDP read without --classify: the checksum is not seen
	nClasses
)

var classNames = [nClasses]string{"switch", "memcached", "unknown"}

// Reply kinds, from the reply's text.
const (
	kindValue     = iota // VALUE ... END: a GET hit
	kindMiss             // END alone: a GET miss
	kindStored           // STORED
	kindNotStored        // NOT_STORED, EXISTS, NOT_FOUND
	kindError            // ERROR, CLIENT_ERROR ..., SERVER_ERROR ...
	kindOther            // anything else
	nKinds
)

var kindNames = [nKinds]string{"value", "miss", "stored", "not_stored", "error", "other"}

// classifyReply tells the kind of a reply from its first bytes.
func classifyReply(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("VALUE ")):
		return kindValue
	case bytes.HasPrefix(b, []byte("END\r\n")):
		return kindMiss
	case bytes.HasPrefix(b, []byte("STORED\r\n")):
		return kindStored
	case bytes.HasPrefix(b, []byte("NOT_STORED")), bytes.HasPrefix(b, []byte("EXISTS")),
		bytes.HasPrefix(b, []byte("NOT_FOUND")):
		return kindNotStored
	case bytes.HasPrefix(b, []byte("ERROR")), bytes.HasPrefix(b, []byte("CLIENT_ERROR")),
		bytes.HasPrefix(b, []byte("SERVER_ERROR")):
		return kindError
	}
	return kindOther
}

// recvStats is one step's counts on the reply side of one socket or
// connection; it is only touched under that socket's lock.
type recvStats struct {
	replies  [nClasses]int64
	kinds    [nKinds]int64
	timeouts int64
	late     int64 // TCP: replies that came after the timeout (counted in timeouts)
	// latency by class, from the scheduled send time [0] and the actual one [1]
	lat [nClasses][2]Hist
}

func (r *recvStats) merge(o *recvStats) {
	for c := 0; c < nClasses; c++ {
		r.replies[c] += o.replies[c]
		r.lat[c][0].Merge(&o.lat[c][0])
		r.lat[c][1].Merge(&o.lat[c][1])
	}
	for k := 0; k < nKinds; k++ {
		r.kinds[k] += o.kinds[k]
	}
	r.timeouts += o.timeouts
	r.late += o.late
}

func (r *recvStats) reply(class, kind int, fromSched, fromSent int64) {
	r.replies[class]++
	r.kinds[kind]++
	r.lat[class][0].Record(fromSched)
	r.lat[class][1].Record(fromSent)
}

// sendStats is one step's counts on the send side of one sender goroutine.
type sendStats struct {
	scheduled  int64 // requests due in the measured window
	sent       int64
	gets, sets int64
	skipped    int64 // not sent: the outstanding table (or TCP queue) was full
	sendErrors int64
	lag        Hist // actual send time - scheduled send time
}

func (s *sendStats) merge(o *sendStats) {
	s.scheduled += o.scheduled
	s.sent += o.sent
	s.gets += o.gets
	s.sets += o.sets
	s.skipped += o.skipped
	s.sendErrors += o.sendErrors
	s.lag.Merge(&o.lag)
}
