fn main() {
    println!("bloomery {}", env!("CARGO_PKG_VERSION"));
}
