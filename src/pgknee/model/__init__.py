"""What crosses the layers: the records a step measured, how they are stored and read, and the
names and rules the layers share."""
