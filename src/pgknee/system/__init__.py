"""The processes and files pgknee starts and keeps: spawning and stopping, safe paths, the registry and its watchdog."""
