"""One conversation on screen: controller, tab, header, composer, status, settings."""
