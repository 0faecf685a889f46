"""p4cache: the control side of the in-network memcached cache (wire formats, controller)."""
