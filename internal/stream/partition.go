package stream

// PartitionOf returns the partition, of n, that a Kafka producer using
// kafka-go's Hash balancer (eventlog.NewWriter's, and Sarama's) gives the key:
// FNV-1a 32 of the key as a signed int32, modulo n, made non-negative. The
// accuracy harness partitions items with it, so its partitions hold the same
// items as the speed workers'. It panics when n < 1.
func PartitionOf(key string, n int) int {
	if n < 1 {
		panic("BUG: stream: PartitionOf with no partitions")
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	p := int32(h) % int32(n)
	if p < 0 {
		p = -p
	}
	return int(p)
}
