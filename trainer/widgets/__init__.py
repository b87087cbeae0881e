"""Small display widgets the screens share."""
