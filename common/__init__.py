"""What every package of the project shares and that belongs to none of them (the compiler, the
bot, the reports): kept free of imports from those packages, so each may import it."""
