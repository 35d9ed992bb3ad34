package checkpoint

// SetCrash makes every later Save call fn after each of its steps ("piece", "pieces",
// "manifest"); an error from fn stops the Save there, as a crash would.
func (s *Keeper) SetCrash(fn func(step string) error) {
	s.mu.Lock()
	s.crash = fn
	s.mu.Unlock()
}

// SetParallel sets how many pieces a Save or Load moves at once.
func (s *Keeper) SetParallel(n int) { s.parallel = n }

// EncodeV1 lays out a version 1 checkpoint, as builds before pieces wrote them.
func EncodeV1(cp Checkpoint) []byte {
	b := Encode(Checkpoint{Topic: cp.Topic, Partition: cp.Partition, Offset: cp.Offset, CreatedAt: cp.CreatedAt, State: cp.State})
	// Version 2 with no pieces is version 1 plus a zero piece count after the topic.
	at := 4 + 2 + 4 + 8 + 8 + 2 + len(cp.Topic)
	v1 := append([]byte{}, b[:at]...)
	v1 = append(v1, b[at+4:len(b)-4]...)
	v1[4], v1[5] = 0, formatV1
	return appendCRC(v1)
}
