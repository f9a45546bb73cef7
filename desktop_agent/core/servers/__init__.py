"""Model servers: discovery on the usual local ports, model details, endpoint config."""
