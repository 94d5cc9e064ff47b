SELECT rolsuper FROM pg_roles WHERE rolname = current_user
