"""Workers on sbredis queues (filled in below)."""
