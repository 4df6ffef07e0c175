"""The reference link's I/O shell: the producer server and the consumer client (trio), and TLS
over trio streams. Everything they decide is decided by the pure core above them."""
