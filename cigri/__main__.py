from .cli import grid

grid()
