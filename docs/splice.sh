# Sourced by docs/regenerate-figures.sh and docs/regenerate-budgets.sh: splice FILE NAME SNIPPET
# replaces the text between `<!-- BEGIN generated NAME -->` and `<!-- END generated NAME -->` in
# FILE with the contents of SNIPPET (trailing blank lines dropped). Text outside the block is
# left alone; a FILE without the block is an error, so a renamed block cannot be skipped silently.
splice() { # file name snippet
  grep -q "<!-- BEGIN generated $2 -->" "$1" || { echo "splice: $1 has no block '$2'" >&2; exit 1; }
  SNIPPET="$3" NAME="$2" perl -0pi -e '
    my $name = quotemeta $ENV{NAME};
    open my $f, "<", $ENV{SNIPPET} or die "$ENV{SNIPPET}: $!";
    my $text = do { local $/; <$f> };
    $text =~ s/\n+\z/\n/;
    s/(<!-- BEGIN generated $name -->\n).*?(<!-- END generated $name -->)/$1$text$2/s
      or die "block $ENV{NAME} not found";
  ' "$1"
}
