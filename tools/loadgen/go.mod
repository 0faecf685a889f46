module p4cache/loadgen

go 1.19
